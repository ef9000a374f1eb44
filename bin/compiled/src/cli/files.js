/**
 * berth file ls|cat|write|rm — a session's files: the overlay over the base. Contents travel
 * as raw bytes (stdout, stdin or a local file), never as base64 by hand.
 */
import { readFile } from "node:fs/promises";
import { DeleteFileResponseSchema, FileChange, FileSource, ListFilesResponseSchema, WriteFileResponseSchema } from "@berth/client";
import { allPages, cliFor } from "./client.js";
import { enumName, jsonLine, keyValues, paint, print, table, UsageError } from "./output.js";
import { idArgument } from "./ids.js";
async function readStdin() {
    const chunks = [];
    for await (const chunk of process.stdin)
        chunks.push(chunk);
    return Buffer.concat(chunks);
}
function entryState(e) {
    if (e.deleted)
        return paint("red", "deleted");
    if (e.source === FileSource.BASE)
        return "base";
    return paint("green", enumName(FileChange, e.change, "FILE_CHANGE_").toLowerCase());
}
function conflictLines(conflicts) {
    return conflicts.map((c) => `also touched by ${c.agentName} (session ${c.sessionId})${c.symbols.length ? `: ${c.symbols.join(", ")}` : ""}`);
}
export function registerFiles(program) {
    const file = program.command("file").description("a session's files: its overlay over the base commit");
    file
        .command("ls")
        .description("list the merged view of the base and the overlay (ListFiles), every page")
        .addArgument(idArgument("session", "<session>", "the session id"))
        .option("--prefix <prefix>", "only paths starting with this")
        .option("--no-deleted", "leave out the paths this session deleted (listed, marked, by default)")
        .action(async (sessionId, opts, command) => {
        const cli = cliFor(command);
        const entries = await allPages((pageToken) => cli.call("listing files", () => cli.workspaces.listFiles({ sessionId, prefix: opts.prefix ?? "", pageToken, includeDeleted: opts.deleted })).then((r) => ({ items: r.entries, nextPageToken: r.nextPageToken })));
        if (cli.json)
            return print(jsonLine(ListFilesResponseSchema, { $typeName: "berth.v1.ListFilesResponse", entries, nextPageToken: "" }));
        if (entries.length === 0)
            return print("no files");
        print(table(["PATH", "STATE", "OTHERS"], entries.map((e) => [e.path, entryState(e), e.modifiedByOther ? paint("yellow", "modified by another session") : ""])));
    });
    file
        .command("cat")
        .description("print a file's bytes (ReadFile): the overlay's, else the base's")
        .addArgument(idArgument("session", "<session>", "the session id"))
        .argument("<path>", "repository-relative path")
        .action(async (sessionId, path, _opts, command) => {
        const cli = cliFor(command);
        const res = await cli.call("reading", () => cli.workspaces.readFile({ sessionId, path }));
        if (cli.json)
            return print(JSON.stringify({ path, hash: res.hash, source: enumName(FileSource, res.source, ""), content: Buffer.from(res.content).toString("base64") }));
        process.stdout.write(res.content);
    });
    file
        .command("write")
        .description("write a file into the overlay (WriteFile) from a local file, or from stdin when none is given (or -)")
        .addArgument(idArgument("session", "<session>", "the session id"))
        .argument("<path>", "repository-relative path")
        .argument("[local-file]", "where the content comes from; default: stdin")
        .option("--expect-hash <sha256>", "write only if the current content has this hash")
        .option("--new", "write only if the file does not exist yet")
        .option("--symbol <name...>", "symbols the write changes besides those Berth finds")
        .action(async (sessionId, path, localFile, opts, command) => {
        const cli = cliFor(command);
        if (opts.new && opts.expectHash !== undefined)
            throw cli.fail(new UsageError("--new and --expect-hash exclude each other"));
        let content;
        if (localFile === undefined || localFile === "-") {
            if (process.stdin.isTTY)
                throw cli.fail(new UsageError("berth file write: give a local file, or pipe the content on stdin"));
            content = await readStdin();
        }
        else {
            try {
                content = await readFile(localFile);
            }
            catch (err) {
                throw cli.fail(new UsageError(`cannot read ${localFile}: ${err.message}`));
            }
        }
        const expectedHash = opts.new ? "" : opts.expectHash;
        const res = await cli.call("writing", () => cli.workspaces.writeFile({ sessionId, path, content, ...(expectedHash !== undefined ? { expectedHash } : {}), declaredSymbols: opts.symbol ?? [] }));
        if (cli.json)
            return print(jsonLine(WriteFileResponseSchema, res));
        print(keyValues([
            ["path", path],
            ["change", enumName(FileChange, res.change, "FILE_CHANGE_").toLowerCase()],
            ["bytes", String(content.byteLength)],
            ["hash", res.newHash],
            ["symbols", res.symbols.map((s) => s.name).join(", ")],
        ]));
        for (const line of conflictLines(res.conflicts))
            process.stderr.write(`berth: ${line}\n`);
    });
    file
        .command("rm")
        .description("delete a file in the overlay (DeleteFile): a tombstone over the base")
        .addArgument(idArgument("session", "<session>", "the session id"))
        .argument("<path>", "repository-relative path")
        .option("--expect-hash <sha256>", "delete only if the current content has this hash")
        .action(async (sessionId, path, opts, command) => {
        const cli = cliFor(command);
        const res = await cli.call("deleting", () => cli.workspaces.deleteFile({ sessionId, path, ...(opts.expectHash !== undefined ? { expectedHash: opts.expectHash } : {}) }));
        if (cli.json)
            return print(jsonLine(DeleteFileResponseSchema, res));
        print(keyValues([["deleted", path], ["symbols", res.symbols.map((s) => s.name).join(", ")]]));
        for (const line of conflictLines(res.conflicts))
            process.stderr.write(`berth: ${line}\n`);
    });
}
