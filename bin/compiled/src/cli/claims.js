import { ClaimSymbolsResponseSchema, DescribeOtherModifiersResponseSchema, ReleaseSymbolsResponseSchema, ChangesetState } from "@berth/client";
import { cliFor, resolveRepoIds } from "./client.js";
import { enumName, formatTime, jsonLine, print, table } from "./output.js";
import { idArgument, idOption } from "./ids.js";
/** A path and its symbols; no symbols: the file as a whole. */
function refs(path, symbols) {
    return symbols.length === 0 ? [{ path, symbol: "" }] : symbols.map((symbol) => ({ path, symbol }));
}
export function registerClaims(program) {
    program
        .command("claim")
        .description("claim symbols of a file before editing them, all or nothing (ClaimSymbols); SYMBOL_LOCKED names the holder")
        .addArgument(idArgument("session", "<session>", "the session id"))
        .argument("<path>", "repository-relative path")
        .argument("[symbols...]", "qualified symbol names, e.g. TaskService.create_task; none: the file as a whole")
        .action(async (sessionId, path, symbols, _opts, command) => {
        const cli = cliFor(command);
        const res = await cli.call("claiming", () => cli.workspaces.claimSymbols({ sessionId, symbols: refs(path, symbols) }));
        if (cli.json)
            return print(jsonLine(ClaimSymbolsResponseSchema, res));
        print(table(["PATH", "SYMBOL", "HOLDER", "SINCE"], res.claims.map((c) => [c.path, (c.symbol || "(file)") + (c.notYetDefined ? " (not yet defined: a reservation)" : ""), c.agentName, formatTime(c.acquiredAt)])));
    });
    program
        .command("release")
        .description("release claims the session holds (ReleaseSymbols); no path: every claim of the session")
        .addArgument(idArgument("session", "<session>", "the session id"))
        .argument("[path]", "repository-relative path")
        .argument("[symbols...]", "qualified symbol names; none: the file as a whole")
        .action(async (sessionId, path, symbols, _opts, command) => {
        const cli = cliFor(command);
        const res = await cli.call("releasing", () => cli.workspaces.releaseSymbols({ sessionId, symbols: path === undefined ? [] : refs(path, symbols) }));
        if (cli.json)
            return print(jsonLine(ReleaseSymbolsResponseSchema, res));
        print(`released ${res.released} claim(s)`);
    });
    program
        .command("who-touched")
        .description("who else touched a file, and which of its symbols (DescribeOtherModifiers)")
        .argument("<path>", "repository-relative path")
        .requiredOption("--repo <repo>", "the repository (id or name)")
        .addOption(idOption("session", "--session <id>", "leave out this session (usually your own)"))
        .action(async (path, opts, command) => {
        const cli = cliFor(command);
        const [repoId] = await resolveRepoIds(cli, [opts.repo]);
        const res = await cli.call("asking", () => cli.workspaces.describeOtherModifiers({ repoId: repoId, path, excludeSessionId: opts.session ?? "" }));
        if (cli.json)
            return print(jsonLine(DescribeOtherModifiersResponseSchema, res));
        if (res.modifiers.length === 0)
            return print(`nobody else touched ${path}`);
        print(res.text);
        print(table(["SESSION", "AGENT", "CHANGESET", "SYMBOLS"], res.modifiers.map((m) => [m.sessionId, m.agentName, enumName(ChangesetState, m.changesetState, "CHANGESET_STATE_"), m.symbols.join(", ") || "(file)"])));
    });
}
