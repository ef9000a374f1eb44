/** berth changeset transition — TransitionChangeset. */
import { InvalidArgumentError } from "commander";
import { ChangesetState, ListVerificationsResponseSchema, TransitionChangesetResponseSchema, VerificationState } from "@berth/client";
import { cliFor } from "./client.js";
import { enumName, formatTime, jsonLine, keyValues, print, table } from "./output.js";
import { changesetName } from "./sessions.js";
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
        .command("transition")
        .description("move a changeset to another state (TransitionChangeset): DRAFT→SUBMITTED→VERIFYING→APPROVED|REJECTED, APPROVED→MERGED, any non-terminal→CLOSED")
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
    changeset
        .command("verifications")
        .alias("checks")
        .description("the runs of its repository's check on a changeset, oldest first, with the last run's output (ListVerifications)")
        .addArgument(idArgument("changeset", "<changeset>", "the changeset id"))
        .option("--all", "print every run's output, not only the last's")
        .action(async (changesetId, opts, command) => {
        const cli = cliFor(command);
        const res = await cli.call("listing verifications", () => cli.workspaces.listVerifications({ changesetId }));
        if (cli.json)
            return print(jsonLine(ListVerificationsResponseSchema, res));
        const vs = res.verifications;
        if (vs.length === 0)
            return print("no verifications (the repository has no check, or the changeset never reached VERIFYING)");
        print(table(["ID", "STATE", "REASON", "STARTED", "FINISHED", "COMMIT"], vs.map((v) => [v.id, enumName(VerificationState, v.state, "VERIFICATION_STATE_").toLowerCase(), v.reason || "-", formatTime(v.startedAt), v.finishedAt ? formatTime(v.finishedAt) : "-", v.commitId.slice(0, 12) || "-"])));
        for (const v of opts.all ? vs : vs.slice(-1)) {
            if (v.outputTail === "")
                continue;
            print(`\n--- output of ${v.id} (its last 16 KiB at most) ---`);
            print(v.outputTail.trimEnd());
        }
    });
}
