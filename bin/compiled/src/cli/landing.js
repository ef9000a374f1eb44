/** berth commit / berth merge — CommitChangeset and the MERGED transition (docs/landing-work.md). */
import { InvalidArgumentError } from "commander";
import { ChangesetState, CommitChangesetResponseSchema, TransitionChangesetResponseSchema } from "@berth/client";
import { cliFor } from "./client.js";
import { jsonLine, keyValues, print } from "./output.js";
import { changesetName } from "./sessions.js";
import { idArgument } from "./ids.js";
/** "Ada Lovelace <ada@example.com>" → its name and e-mail, as git writes an author. */
export function parseAuthor(raw) {
    const m = /^\s*([^<>]*?)\s*<([^<>]*)>\s*$/.exec(raw);
    if (!m || m[1] === "" || m[2] === "")
        throw new InvalidArgumentError('expected "Name <email>"');
    return { name: m[1], email: m[2] };
}
export function registerLanding(program) {
    program
        .command("commit")
        .description("write a changeset's work as one commit on refs/heads/berth/<changeset> in its repository (CommitChangeset); the same work gives the same commit")
        .addArgument(idArgument("changeset", "<changeset>", "the changeset id"))
        .option("-m, --message <text>", "the commit message (default: the sessions' intent, then their agents' own commit messages)")
        .option("--author <name-and-email>", 'the author, "Name <email>" (default: the calling agent)', parseAuthor)
        .action(async (changesetId, opts, command) => {
        const cli = cliFor(command);
        const res = await cli.call("committing", () => cli.workspaces.commitChangeset({ changesetId, message: opts.message ?? "", ...(opts.author ? { author: opts.author } : {}) }));
        if (cli.json)
            return print(jsonLine(CommitChangesetResponseSchema, res));
        print(keyValues([["changeset", changesetId], ["commit", res.commitId], ["ref", res.ref], ["paths", String(res.paths)], ["unchanged", res.unchanged ? "yes" : "no"]]));
    });
    program
        .command("merge")
        .description("merge an APPROVED changeset's commit into a branch and mark it MERGED (TransitionChangeset to MERGED): fast-forward when possible, else a merge commit; refused on conflicts")
        .addArgument(idArgument("changeset", "<changeset>", "the changeset id"))
        .option("--target <ref>", "the branch to merge into (default: the one HEAD names in the repository)")
        .option("--reason <text>", "why")
        .action(async (changesetId, opts, command) => {
        const cli = cliFor(command);
        const res = await cli.call("merging", () => cli.workspaces.transitionChangeset({ changesetId, toState: ChangesetState.MERGED, targetRef: opts.target ?? "", reason: opts.reason ?? "" }));
        if (cli.json)
            return print(jsonLine(TransitionChangesetResponseSchema, res));
        const m = res.merge;
        print(keyValues([
            ["changeset", changesetId],
            ["state", changesetName(res.changeset.state)],
            ["target", m?.targetRef ?? ""],
            ["from", m?.oldCommitId ?? ""],
            ["to", m?.newCommitId ?? ""],
            ["commit", m?.changesetCommitId ?? ""],
            ["fast-forward", m?.fastForward ? "yes" : "no"],
        ]));
    });
}
