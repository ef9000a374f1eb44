/** berth changeset ls|show|transition — ListChangesets, GetChangeset (with DiffChangeset's summary), TransitionChangeset. */
import { InvalidArgumentError } from "commander";
import { ChangesetState, DiffChangesetResponseSchema, GetChangesetResponseSchema, ListChangesetsResponseSchema, TransitionChangesetResponseSchema } from "@berth/client";
import { create, toJson } from "@bufbuild/protobuf";
import { allPages, cliFor, resolveRepoIds } from "./client.js";
import { formatTime, jsonLine, keyValues, print, table } from "./output.js";
import { changesetName, lifecycleName } from "./sessions.js";
import { idArgument } from "./ids.js";
const STATE_NAMES = Object.entries(ChangesetState)
    .filter((e) => typeof e[1] === "number" && e[1] !== ChangesetState.UNSPECIFIED)
    .map(([name, value]) => [name.toLowerCase(), value]);
/** "submitted", "SUBMITTED" or "CHANGESET_STATE_SUBMITTED" → ChangesetState.SUBMITTED. */
export function parseChangesetState(raw) {
    const name = raw.trim().toLowerCase().replace(/^changeset_state_/, "");
    const found = STATE_NAMES.find(([n]) => n === name);
    if (!found)
        throw new InvalidArgumentError(`expected one of ${STATE_NAMES.map(([n]) => n).join(", ")}`);
    return found[1];
}
export function registerChangeset(program) {
    const changeset = program.command("changeset").description("changesets: the unit of work a workspace produces");
    changeset
        .command("ls")
        .description("list a repository's changesets, newest first (ListChangesets); --state submitted --state approved: what waits for review")
        .requiredOption("--repo <id>", "the repository (id or name)")
        .option("--state <state>", "only changesets in this state (repeatable), e.g. submitted", (raw, prev) => [...(prev ?? []), parseChangesetState(raw)])
        .action(async (opts, command) => {
        const cli = cliFor(command);
        const [repoId] = await resolveRepoIds(cli, [opts.repo]);
        const states = opts.state ?? [];
        const changesets = await allPages((pageToken) => cli.call("listing changesets", () => cli.workspaces.listChangesets({ repoId: repoId, states, pageToken })).then((r) => ({ items: r.changesets, nextPageToken: r.nextPageToken })));
        const res = create(ListChangesetsResponseSchema, { changesets });
        if (cli.json)
            return print(jsonLine(ListChangesetsResponseSchema, res));
        if (res.changesets.length === 0)
            return print(states.length > 0 ? "no changesets in those states" : "no changesets");
        print(table(["CHANGESET", "STATE", "UPDATED", "COMMIT", "REASON"], res.changesets.map((c) => [c.id, changesetName(c.state), formatTime(c.updatedAt), c.commitId.slice(0, 12), c.reason])));
    });
    changeset
        .command("show")
        .description("show a changeset: its state, history, sessions, diff summary (DiffChangeset --stat), commit and branch (GetChangeset)")
        .addArgument(idArgument("changeset", "<changeset>", "the changeset id"))
        .action(async (changesetId, _opts, command) => {
        const cli = cliFor(command);
        const [got, diff] = await Promise.all([
            cli.call("reading the changeset", () => cli.workspaces.getChangeset({ changesetId })),
            cli.call("diffing", () => cli.workspaces.diffChangeset({ changesetId })),
        ]);
        if (cli.json) {
            // The patch is `berth diff --changeset`'s; here only its summary, as the text form shows.
            const stat = toJson(DiffChangesetResponseSchema, create(DiffChangesetResponseSchema, { ...diff, patch: new Uint8Array() }));
            return print(JSON.stringify({ ...toJson(GetChangesetResponseSchema, got), diff: stat }));
        }
        print(changesetBlock(got, diff));
    });
    changeset
        .command("transition")
        .description("move a changeset to another state (TransitionChangeset): DRAFT→SUBMITTED→VERIFYING→APPROVED|REJECTED, APPROVED→MERGED, any non-terminal→CLOSED, SUBMITTED|VERIFYING|APPROVED→DRAFT (sent back for changes)")
        .addArgument(idArgument("changeset", "<changeset>", "the changeset id"))
        .argument("<state>", "the state to move to, e.g. submitted", parseChangesetState)
        .option("--reason <text>", "why")
        .action(async (changesetId, toState, opts, command) => {
        const cli = cliFor(command);
        const res = await cli.call("transitioning", () => cli.workspaces.transitionChangeset({ changesetId, toState, reason: opts.reason ?? "" }));
        if (cli.json)
            return print(jsonLine(TransitionChangesetResponseSchema, res));
        const c = res.changeset;
        print(keyValues([["changeset", c.id], ["repository", c.repoId], ["state", changesetName(c.state)], ["reason", c.reason], ["updated", formatTime(c.updatedAt)]]));
    });
}
/** `berth changeset show`: the changeset, then its history, sessions and diff summary as tables. */
function changesetBlock(got, diff) {
    const c = got.changeset;
    const head = keyValues([
        ["changeset", c.id],
        ["repository", c.repoId],
        ["state", changesetName(c.state)],
        ["reason", c.reason],
        ["created", formatTime(c.createdAt)],
        ["updated", formatTime(c.updatedAt)],
        ["commit", c.commitId],
        ["branch", got.branch],
        ["merged into", got.mergedInto],
        ["you may move it to", got.allowedTransitions.map(changesetName).join(", ")],
    ]);
    const history = got.transitions.length === 0
        ? "no recorded transitions"
        : table(["AT", "FROM", "TO", "WHO", "REASON"], got.transitions.map((t) => [formatTime(t.at), changesetName(t.from), changesetName(t.to), t.who, t.reason]));
    const sessions = got.sessions.length === 0
        ? "no sessions"
        : table(["SESSION", "AGENT", "LIFECYCLE", "INTENT"], got.sessions.map((s) => [s.sessionId, `${s.agentName} (${s.agentId})`, lifecycleName(s.lifecycleState), s.intent]));
    const added = diff.paths.reduce((n, p) => n + p.linesAdded, 0);
    const removed = diff.paths.reduce((n, p) => n + p.linesRemoved, 0);
    const stat = [
        ...diff.paths.map((p) => `${p.binary ? "bin" : `+${p.linesAdded} -${p.linesRemoved}`}\t${p.oldPath ? `${p.oldPath} => ` : ""}${p.path}`),
        ...diff.conflicts.map((x) => `conflict\t${x.path}\t${x.reason} (${x.sessionIds.join(", ")})`),
        `${diff.paths.length} path(s) changed, +${added} -${removed}`,
    ].join("\n");
    return [head, "", "history", history, "", "sessions", sessions, "", "diff", stat].join("\n");
}
