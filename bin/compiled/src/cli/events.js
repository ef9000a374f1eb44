/**
 * berth events watch — a live tail of WatchEvents through @berth/client's events(), which
 * reconnects with capped, jittered backoff when the connection drops or the server ends the
 * stream (UNAVAILABLE on shutdown, RESOURCE_EXHAUSTED for a subscriber that fell behind) and
 * resumes after the last seq it yielded, so no event is printed twice and none is skipped.
 *
 * "From now" (the default) and --history are told apart by the events' occurred_at against the
 * moment the command started: WatchEvents has no "head seq" to start after (a field it lacks),
 * so the stream starts at 0 and the retained history is read and left out.
 */
import { InvalidArgumentError } from "commander";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { ChangesetState, ConnectError, EventSchema, FileChange, TurnOutcome, VerificationState } from "@berth/client";
import { cliFor, collect, resolveRepoIds } from "./client.js";
import { codeName } from "../transport/status.js";
import { enumName, jsonLine, note, paint, print, shortId } from "./output.js";
import { idOption } from "./ids.js";
const FAMILY_COLOUR = {
    session: "cyan",
    changeset: "magenta",
    file: "green",
    claim: "yellow",
    turn: "blue",
    env: "grey",
};
/** Kinds that deserve attention whatever their family. */
const KIND_COLOUR = { "session.abandoned": "red", "claim.conflict": "red", "session.stranded": "yellow" };
function parseSeq(raw) {
    if (!/^\d+$/.test(raw.trim()))
        throw new InvalidArgumentError("expected a sequence number (0 or more)");
    return BigInt(raw.trim());
}
function clock(event) {
    if (!event.occurredAt)
        return "--:--:--.---";
    const d = timestampDate(event.occurredAt);
    const two = (n) => String(n).padStart(2, "0");
    return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, "0")}`;
}
/** The payload's gist: DRAFT→SUBMITTED, a path, a resumed session, an eviction reason. */
function detail(event) {
    const p = event.payload;
    switch (p.case) {
        case "sessionCreated":
            return p.value.agentName;
        case "sessionResumed":
            return `${shortId(p.value.oldSessionId)}→${shortId(p.value.newSessionId)}`;
        case "sessionEnded":
            return p.value.cause;
        case "changesetTransitioned":
            return `${enumName(ChangesetState, p.value.fromState, "")}→${enumName(ChangesetState, p.value.toState, "")}`;
        case "fileChanged":
            return `${p.value.path} ${enumName(FileChange, p.value.change, "").toLowerCase()}`;
        case "claimChanged":
            return `${p.value.path}${p.value.symbols.length ? ` {${p.value.symbols.join(", ")}}` : ""}${p.value.holderAgentName ? ` held by ${p.value.holderAgentName}` : ""}`;
        case "turnChanged":
            return `turn ${shortId(p.value.turnId)}${p.value.outcome ? ` ${enumName(TurnOutcome, p.value.outcome, "").toLowerCase()}` : ""}`;
        case "environmentEvicted":
            return p.value.reason;
        case "captureFailed":
            return `${p.value.cause}: ${p.value.failed.length} path(s) not captured${p.value.keptAt ? `, kept at ${p.value.keptAt}` : ""}`;
        case "changesetCommitted":
            return `${p.value.commitId.slice(0, 12)} on ${p.value.ref} (${p.value.paths} path(s))`;
        case "changesetMerged":
            return `${p.value.targetRef} ${p.value.oldCommitId.slice(0, 12)}→${p.value.newCommitId.slice(0, 12)}${p.value.fastForward ? " (fast-forward)" : ""}`;
        case "workspaceRebased":
            return `${p.value.oldBaseCommit.slice(0, 12)}→${p.value.newBaseCommit.slice(0, 12)}${p.value.conflicted.length ? `, ${p.value.conflicted.length} conflicted` : ""}`;
        case "commentChanged":
            return `comment ${shortId(p.value.commentId)}${p.value.path ? ` on ${p.value.path}${p.value.line ? `:${p.value.line}` : ""}` : ""}`;
        case "verificationStarted":
            return `check ${shortId(p.value.verificationId)}: ${(p.value.check?.argv ?? []).join(" ")}`;
        case "verificationOutput":
            return `check ${shortId(p.value.verificationId)}: ${new TextDecoder().decode(p.value.chunk).trimEnd().split("\n").at(-1) ?? ""}`;
        case "verificationFinished":
            return `check ${shortId(p.value.verificationId)} ${enumName(VerificationState, p.value.state, "").toLowerCase()}${p.value.exitCode !== undefined ? ` (exit ${p.value.exitCode})` : ""}`;
        // Every case is named (no default), so a new payload kind is a compile error here until it
        // is given its detail. undefined: no payload, or one this CLI's protos do not know.
        case "sessionAbandoned":
        case "sessionStranded":
        case undefined:
            return "";
    }
}
/** One line per event: seq, time, kind, repo and session short ids, agent, what changed, reason. */
export function eventLine(event) {
    const family = event.kind.split(".")[0] ?? "";
    const colour = KIND_COLOUR[event.kind] ?? FAMILY_COLOUR[family];
    return [
        paint("bold", event.seq.toString().padStart(6)),
        paint("dim", clock(event)),
        paint(colour, event.kind.padEnd(22)),
        `repo ${shortId(event.repoId) || "-".padEnd(8)}`,
        `session ${shortId(event.sessionId) || "-".padEnd(8)}`,
        (event.agentId || "-").padEnd(10),
        detail(event),
        event.reason ? paint("dim", event.reason) : "",
    ]
        .filter((part, i) => i < 6 || part !== "")
        .join("  ")
        .trimEnd();
}
/** --history: the replay is over once no event has come for this long. */
const HISTORY_IDLE_MS = 1_000;
function occurredMs(event) {
    return event.occurredAt ? timestampDate(event.occurredAt).getTime() : 0;
}
export function registerEvents(program) {
    const events = program.command("events").description("lifecycle events");
    events
        .command("watch")
        .description("a live tail of events (WatchEvents) that reconnects and resumes from its last seq")
        .option("--repo <id>", "only this repository (id or name); repeatable", collect)
        .option("--kind <pattern>", "only these kinds: exact, 'session.*' or '*.stranded'; repeatable", collect)
        .option("--after <seq>", "start after this seq (0: every retained event); default: from now, only events that happen after the command starts", parseSeq)
        .option("--history", "print the retained events (after --after, default 0) and exit instead of tailing")
        .addOption(idOption("session", "--exclude-session <id>", "leave out this session's events"))
        .action(async (opts, command) => {
        const cli = cliFor(command);
        const repoIds = opts.repo ? await resolveRepoIds(cli, opts.repo) : [];
        const startedAt = Date.now();
        // From now: history is read (from 0) but not printed, up to the first event that happened after the start.
        let live = opts.after !== undefined && !opts.history;
        process.stdout.on("error", (err) => {
            if (err.code === "EPIPE")
                process.exit(0);
        });
        process.once("SIGINT", () => process.exit(0));
        const abort = new AbortController();
        let announced = false;
        let idle;
        const idleStop = () => {
            clearTimeout(idle);
            idle = setTimeout(() => abort.abort(), HISTORY_IDLE_MS);
        };
        const events = cli.events({ afterSeq: opts.after ?? 0n, repoIds, kinds: opts.kind ?? [], excludeSessionId: opts.excludeSession ?? "" }, {
            signal: abort.signal,
            onConnect: () => {
                if (opts.history)
                    idleStop();
                else if (!live && !announced) {
                    // Said once, on stderr: a script (or a test) knows from here on nothing is missed.
                    announced = true;
                    note(`watching ${cli.serverUrl} from now (Ctrl-C to stop)`);
                }
            },
            onReconnect: ({ afterSeq, error, delayMs }) => {
                const what = error === undefined ? "stream ended" : `connection lost (${error instanceof ConnectError ? `${codeName(error.code)}: ${error.rawMessage}` : String(error)})`;
                note(`${what}; reconnecting to ${cli.serverUrl} after seq ${afterSeq} in ${(delayMs / 1000).toFixed(1)}s`);
            },
        });
        try {
            for await (const event of events) {
                if (opts.history) {
                    if (occurredMs(event) >= startedAt)
                        break;
                    idleStop();
                }
                else if (!live) {
                    if (occurredMs(event) < startedAt)
                        continue;
                    live = true;
                }
                print(cli.json ? jsonLine(EventSchema, event) : eventLine(event));
            }
        }
        catch (err) {
            throw cli.fail(err);
        }
        finally {
            clearTimeout(idle);
        }
    });
}
