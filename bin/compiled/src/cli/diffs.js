import { DiffChangesetResponseSchema, DiffWorkspaceResponseSchema, RebaseWorkspaceResponseSchema } from "@berth/client";
import { cliFor } from "./client.js";
import { jsonLine, keyValues, print } from "./output.js";
import { usageRule } from "./usage.js";
import { idArgument, idOption } from "./ids.js";
export function registerDiffs(program) {
    const diff = program
        .command("diff")
        .description("print the unified diff of a session's overlay against its base commit (DiffWorkspace); `git apply` takes it")
        .addArgument(idArgument("session", "[session]", "the session id (or --changeset)"))
        .addOption(idOption("changeset", "--changeset <id>", "the combined diff of every session of a changeset (DiffChangeset)"))
        .option("--binary", "binary files as git binary patches instead of \"Binary files … differ\"")
        .option("--stat", "the summary per path instead of the patch")
        .action(async (sessionId, opts, command) => {
        const cli = cliFor(command);
        const binary = opts.binary === true;
        const res = opts.changeset
            ? await cli.call("diffing", () => cli.workspaces.diffChangeset({ changesetId: opts.changeset, binary }))
            : await cli.call("diffing", () => cli.workspaces.diffWorkspace({ sessionId: sessionId, binary }));
        if (cli.json)
            return print("conflicts" in res ? jsonLine(DiffChangesetResponseSchema, res) : jsonLine(DiffWorkspaceResponseSchema, res));
        if (opts.stat) {
            const lines = res.paths.map((p) => `${p.binary ? "bin" : `+${p.linesAdded} -${p.linesRemoved}`}\t${p.oldPath ? `${p.oldPath} => ` : ""}${p.path}${p.symbols.length ? `\t{${p.symbols.join(", ")}}` : ""}`);
            if ("conflicts" in res)
                for (const c of res.conflicts)
                    lines.push(`conflict\t${c.path}\t${c.reason} (${c.sessionIds.join(", ")})`);
            if (lines.length > 0)
                print(lines.join("\n"));
            return;
        }
        // The patch's own bytes: whatever the files' encoding, `berth diff … | git apply` reproduces them.
        process.stdout.write(res.patch);
        if ("conflicts" in res && res.conflicts.length > 0) {
            process.stderr.write(`berth: ${res.conflicts.length} path(s) differ between the changeset's sessions: ${res.conflicts.map((c) => c.path).join(", ")}\n`);
        }
    });
    usageRule(diff, (c) => {
        const session = c.processedArgs[0];
        const changeset = c.opts().changeset;
        if (session === undefined && changeset === undefined)
            return "error: missing required argument 'session' (or --changeset <id>)";
        if (session !== undefined && changeset !== undefined)
            return "error: give a session or --changeset <id>, not both";
        return undefined;
    });
    program
        .command("rebase")
        .description("move a session's workspace onto another commit, merging its overlay three-way (RebaseWorkspace)")
        .addArgument(idArgument("session", "<session>", "the session id"))
        .requiredOption("--onto <rev>", "a commit id or ref of the repository")
        .action(async (sessionId, opts, command) => {
        const cli = cliFor(command);
        const res = await cli.call("rebasing", () => cli.workspaces.rebaseWorkspace({ sessionId, onto: opts.onto }));
        if (cli.json)
            return print(jsonLine(RebaseWorkspaceResponseSchema, res));
        print(keyValues([
            ["session", sessionId],
            ["old base", res.oldBaseCommit],
            ["new base", res.workspace?.baseCommit ?? ""],
            ["merged", res.merged.join(", ")],
            ["dropped", res.dropped.join(", ")],
            ["conflicts", res.conflicts.map((c) => `${c.path} (${c.kind})`).join(", ")],
        ]));
    });
}
