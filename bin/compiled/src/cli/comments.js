/** berth comment add | ls | resolve — review comments on a changeset (AddComment, ListComments, ResolveComment). */
import { create } from "@bufbuild/protobuf";
import { InvalidArgumentError } from "commander";
import { AddCommentResponseSchema, ListCommentsResponseSchema, ResolveCommentResponseSchema } from "@berth/client";
import { allPages, cliFor } from "./client.js";
import { formatTime, jsonLine, keyValues, print, table } from "./output.js";
import { idArgument } from "./ids.js";
function parseLine(raw) {
    const n = Number(raw.trim());
    if (!/^\d+$/.test(raw.trim()) || n < 1 || n > 2_147_483_647)
        throw new InvalidArgumentError("expected a line number (1 or more)");
    return n;
}
/** Where a comment is: path:line, the path, or the changeset. */
function place(c) {
    if (c.path === "")
        return "(changeset)";
    return c.line ? `${c.path}:${c.line}` : c.path;
}
function show(c) {
    return keyValues([
        ["comment", c.id],
        ["changeset", c.changesetId],
        ["on", place(c)],
        ["author", c.author],
        ["created", formatTime(c.createdAt)],
        ["resolved", c.resolved ? `by ${c.resolvedBy} at ${formatTime(c.resolvedAt)}` : "no"],
        ["body", c.body],
    ]);
}
export function registerComments(program) {
    const comment = program.command("comment").description("review comments on a changeset: what a reviewer asks of the agent (docs/agents.md)");
    comment
        .command("add")
        .description("comment on a changeset, a path of it, or a line of a path (AddComment)")
        .addArgument(idArgument("changeset", "<changeset>", "the changeset id"))
        .argument("<body>", "the comment")
        .option("--path <path>", "the repository-relative path the comment is about")
        .option("--line <n>", "the line of --path, in the new file's lines of the changeset's diff", parseLine)
        .action(async (changesetId, body, opts, command) => {
        const cli = cliFor(command);
        const res = await cli.call("commenting", () => cli.workspaces.addComment({ changesetId, body, path: opts.path ?? "", line: opts.line ?? 0 }));
        if (cli.json)
            return print(jsonLine(AddCommentResponseSchema, res));
        print(show(res.comment));
    });
    comment
        .command("ls")
        .description("list a changeset's open review comments, oldest first (ListComments)")
        .addArgument(idArgument("changeset", "<changeset>", "the changeset id"))
        .option("--all", "also the resolved ones")
        .action(async (changesetId, opts, command) => {
        const cli = cliFor(command);
        const comments = await allPages((pageToken) => cli.call("listing comments", () => cli.workspaces.listComments({ changesetId, includeResolved: opts.all ?? false, pageToken })).then((r) => ({ items: r.comments, nextPageToken: r.nextPageToken })));
        const res = create(ListCommentsResponseSchema, { comments });
        if (cli.json)
            return print(jsonLine(ListCommentsResponseSchema, res));
        if (comments.length === 0)
            return print(opts.all ? "no comments" : "no open comments");
        print(table(["COMMENT", "ON", "AUTHOR", "CREATED", "RESOLVED", "BODY"], comments.map((c) => [c.id, place(c), c.author, formatTime(c.createdAt), c.resolved ? c.resolvedBy : "", c.body.replace(/\s*\n\s*/g, " ")])));
    });
    comment
        .command("resolve")
        .description("mark a review comment resolved (ResolveComment); a resolved one is answered as it is")
        .addArgument(idArgument("comment", "<comment>", "the comment id"))
        .action(async (commentId, _opts, command) => {
        const cli = cliFor(command);
        const res = await cli.call("resolving", () => cli.workspaces.resolveComment({ commentId }));
        if (cli.json)
            return print(jsonLine(ResolveCommentResponseSchema, res));
        print(show(res.comment));
    });
}
