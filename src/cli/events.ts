/**
 * berth events watch — a live tail of WatchEvents. When the connection drops, or the server
 * ends the stream (UNAVAILABLE on shutdown, RESOURCE_EXHAUSTED for a subscriber that fell
 * behind), it reconnects with capped, jittered backoff and resumes after the last seq it
 * printed, so no event is printed twice and none is skipped.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { InvalidArgumentError, type Command } from "commander";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { EventSchema, type Event } from "../../gen/berth/v1/event_pb.js";
import { ChangesetState, FileChange, TurnOutcome } from "../../gen/berth/v1/types_pb.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { cliFor, collect, resolveRepoIds } from "./client.js";
import { codeName } from "../transport/status.js";
import { CliExit, enumName, isUnreachable, jsonLine, paint, print, reportError, shortId, stderrColour, type Colour } from "./output.js";

const FAMILY_COLOUR: Record<string, Colour> = {
  session: "cyan",
  changeset: "magenta",
  file: "green",
  claim: "yellow",
  turn: "blue",
  env: "grey",
};
/** Kinds that deserve attention whatever their family. */
const KIND_COLOUR: Record<string, Colour> = { "session.abandoned": "red", "claim.conflict": "red", "session.stranded": "yellow" };

const BACKOFF_START_MS = 200;
const BACKOFF_MAX_MS = 5_000;

function parseSeq(raw: string): bigint {
  if (!/^\d+$/.test(raw.trim())) throw new InvalidArgumentError("expected a sequence number (0 or more)");
  return BigInt(raw.trim());
}

function clock(event: Event): string {
  if (!event.occurredAt) return "--:--:--.---";
  const d = timestampDate(event.occurredAt);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, "0")}`;
}

/** The payload's gist: DRAFT→SUBMITTED, a path, a resumed session, an eviction reason. */
function detail(event: Event): string {
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
    // Every case is named (no default), so a new payload kind is a compile error here until it
    // is given its detail. undefined: no payload, or one this CLI's protos do not know.
    case "sessionAbandoned":
    case "sessionStranded":
    case undefined:
      return "";
  }
}

/** One line per event: seq, time, kind, repo and session short ids, agent, what changed, reason. */
export function eventLine(event: Event): string {
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

/** Failures worth reconnecting after: the transport, a shutdown, back-pressure. */
function retryable(err: unknown): boolean {
  if (!(err instanceof ConnectError)) return isUnreachable(err);
  if (err.code === Code.Unavailable || err.code === Code.ResourceExhausted || err.code === Code.Aborted) return true;
  const transportLevel = err.findDetails(ErrorInfoSchema).length === 0;
  return transportLevel && (err.code === Code.Internal || err.code === Code.Unknown || err.code === Code.Canceled || isUnreachable(err));
}

interface WatchOptions {
  readonly repo?: string[];
  readonly kind?: string[];
  readonly after?: bigint;
  readonly excludeSession?: string;
}

export function registerEvents(program: Command): void {
  const events = program.command("events").description("lifecycle events");

  events
    .command("watch")
    .description("a live tail of events (WatchEvents) that reconnects and resumes from its last seq")
    .option("--repo <id>", "only this repository (id or name); repeatable", collect)
    .option("--kind <pattern>", "only these kinds: exact, 'session.*' or '*.stranded'; repeatable", collect)
    .option("--after <seq>", "start after this seq (default 0: every retained event, then live ones)", parseSeq)
    .option("--exclude-session <id>", "leave out this session's events")
    .action(async (opts: WatchOptions, command: Command) => {
      // Response headers mean the server accepted the stream: from then on, failures are retried.
      let connected = false;
      const markConnected: Interceptor = (next) => async (req) => {
        const res = await next(req);
        if (req.stream) connected = true;
        return res;
      };
      const cli = cliFor(command, [markConnected]);
      const repoIds = opts.repo ? await resolveRepoIds(cli, opts.repo) : [];
      let last = opts.after ?? 0n;

      process.stdout.on("error", (err: NodeJS.ErrnoException) => {
        if (err.code === "EPIPE") process.exit(0);
      });
      process.once("SIGINT", () => process.exit(0));

      let attempt = 0;
      for (;;) {
        const openedAt = Date.now();
        try {
          const stream = cli.workspaces.watchEvents({ afterSeq: last, repoIds, kinds: opts.kind ?? [], excludeSessionId: opts.excludeSession ?? "" });
          for await (const { event } of stream) {
            if (!event || event.seq <= last) continue; // never print an event twice
            last = event.seq;
            attempt = 0;
            print(cli.json ? jsonLine(EventSchema, event) : eventLine(event));
          }
          // The server ended the stream without an error: resume like after a drop.
          if (connected) note(`stream ended; reconnecting to ${cli.serverUrl} after seq ${last}`);
        } catch (err) {
          if (!connected || !retryable(err)) throw new CliExit(reportError(err, cli.serverUrl));
          const what = err instanceof ConnectError ? `${codeName(err.code)}: ${err.rawMessage}` : String(err);
          if (Date.now() - openedAt > 10_000) attempt = 0; // a long-lived stream starts the backoff afresh
          const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_START_MS * 2 ** attempt) * (0.5 + Math.random() / 2);
          attempt++;
          note(`connection lost (${what}); reconnecting to ${cli.serverUrl} after seq ${last} in ${(delay / 1000).toFixed(1)}s`);
          await sleep(delay);
          continue;
        }
        await sleep(BACKOFF_START_MS);
      }
    });
}

function note(text: string): void {
  process.stderr.write(`${paint("yellow", "berth:", stderrColour)} ${text}\n`);
}

