/**
 * The changeset page's checks and review comments (issue 29), in headless Chromium against a real
 * server with token auth: a failing check's output on the page and the changeset kept from
 * APPROVED; a reviewer's comment on a line reaching the agent, shown live on a second page, and
 * resolved by the agent; a comment made on a diff line shown beside that line, listed by the agent's
 * MCP tool and given to its next `berth run`. BERTH_SCREENSHOTS=1 also writes the screenshots of
 * docs/console.md.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { needs } from "../support/services.js";
import { gitRepo, utf8 } from "../overlay/helpers.js";
import { BIN, ROOT, cliEnv } from "../cli/helpers.js";
import { shot, startConsole, text, WAIT, type ConsoleHarness } from "./harness.js";

needs({ chromium: true, bwrap: true })("checks and comments on the changeset page", () => {
  let h: ConsoleHarness<"ops" | "alice" | "dev">;
  let repoId: string;
  const url = (hash: string) => `${h.berth.server.httpUrl}/#/${hash}`;

  beforeAll(async () => {
    // dev is an agent run by `berth run`, which needs an admin's token (the environment's path).
    h = await startConsole({ ops: { roles: ["agent", "admin"] }, alice: {}, dev: { roles: ["agent", "admin"] } });
    repoId = (await h.as("ops").registerRepository({ name: "checks-demo", sourcePath: gitRepo().dir })).repository!.id;
  });
  afterAll(async () => {
    await h?.close();
  });

  const submitted = async (intent: string, file: string, who: "alice" | "dev" = "alice") => {
    const ws = (await h.as(who).createWorkspace({ repoId, mode: WorkspaceMode.PERSISTENT, intent })).workspace!;
    await h.as(who).writeFile({ sessionId: ws.sessionId, path: file, content: utf8("one\ntwo\n") });
    await h.as(who).transitionChangeset({ changesetId: ws.changesetId, toState: 2 /* SUBMITTED */ });
    return ws;
  };

  it("shows a failing check's output and keeps the changeset from APPROVED when a reviewer verifies it from the page", async () => {
    await h.as("ops").setRepositoryCheck({ repositoryId: repoId, check: { argv: ["sh", "-c", "echo broken; exit 1"], timeoutSeconds: 60 } });
    const ws = await submitted("a change whose check fails", "src/checked.txt");
    const page = await h.browser.open(url(`changeset/${ws.changesetId}`), h.tokens.ops);
    const state = () => text(page.getByTestId("changeset-state"));
    await expect.poll(state, WAIT).toBe("submitted");
    await expect.poll(() => text(page.getByTestId("checks")), WAIT).toContain("No check has run");
    await page.getByTestId("to-verifying").click();
    // The run ends FAILED with its output, without a reload, and the changeset is back in SUBMITTED.
    await expect.poll(() => text(page.getByTestId("check-state")), { ...WAIT, timeout: 60_000 }).toBe("failed");
    expect(await text(page.getByTestId("check-output"))).toContain("broken");
    await expect.poll(state, WAIT).toBe("submitted");
    expect(await text(page.getByTestId("history"))).toContain("verifying → submitted");
    expect(await text(page.getByTestId("history"))).not.toContain("approved");
    await shot(page, "checks", true);
    await h.as("ops").setRepositoryCheck({ repositoryId: repoId });
  }, 120_000);

  it("puts a reviewer's comment on a line where the agent reads it, shows it live on another page, and shows the agent's resolution", async () => {
    const ws = await submitted("a change to comment on", "src/new.txt");
    const hash = `changeset/${ws.changesetId}`;
    const page = await h.browser.open(url(hash), h.tokens.ops);
    const second = await h.browser.open(url(hash), h.tokens.ops);
    // The list of comments (a comment on a line the diff shows is also drawn beside that line).
    const list = page.getByTestId("comments");
    const secondList = second.getByTestId("comments");
    await expect.poll(() => text(page.getByTestId("comments")), WAIT).toContain("No comments");
    await page.getByTestId("comment-path").fill("src/new.txt");
    await page.getByTestId("comment-line").fill("2");
    await page.getByTestId("comment-body").fill("rename two to three");
    await page.getByTestId("comment-add").click();
    await expect.poll(() => text(list.getByTestId("comment-where")), WAIT).toBe("src/new.txt:2");

    // The agent gets it (what its MCP list_comments tool and berth run's BERTH_COMMENTS read).
    const open = await h.as("alice").listComments({ changesetId: ws.changesetId });
    expect(open.comments.map((c) => [c.path, c.line, c.body, c.author])).toEqual([["src/new.txt", 2, "rename two to three", "ops"]]);
    // The other page shows it without a reload.
    await expect.poll(() => text(secondList.getByTestId("comment-text")), WAIT).toBe("rename two to three");
    await shot(page, "comments", true);

    await h.as("alice").resolveComment({ commentId: open.comments[0]!.id });
    await expect.poll(() => text(secondList.getByTestId("comment-resolved")), WAIT).toContain("resolved by alice");
    expect(await second.getByTestId("comment-resolve").count()).toBe(0);
    // An empty comment is refused with the field named, and nothing is added.
    await page.getByTestId("comment-add").click();
    await expect.poll(() => text(page.getByTestId("comment-refusal")), WAIT).toContain("body");
    expect(await list.getByTestId("comment").count()).toBe(1);
  }, 120_000);

  it("shows a comment made on a diff line beside that line; the agent's MCP list_comments has it, its next berth run gets it, and its fix and resolution show on the page", async () => {
    const ws = await submitted("a change reviewed line by line", "src/lines.txt", "dev");
    const page = await h.browser.open(url(`changeset/${ws.changesetId}`), h.tokens.ops);
    const file = page.locator('[data-testid=diff-file][data-path="src/lines.txt"]');
    await expect.poll(() => page.getByTestId("changeset-diff").getAttribute("data-rendered"), WAIT).toBe("true");
    // The reviewer clicks line 2's number in the diff and comments there.
    await file.locator('.dl[data-new="2"] [data-testid=diff-line-number]').click();
    await page.getByTestId("inline-comment-body").fill("two should be three");
    await page.getByTestId("inline-comment-add").click();
    // Drawn right under that line, and in the list with its place.
    const thread = file.locator('.dl[data-new="2"] + [data-testid=inline-comments]');
    await expect.poll(() => text(thread.getByTestId("comment-text")), WAIT).toBe("two should be three");
    expect(await page.getByTestId("inline-comment-form").count()).toBe(0);
    expect(await text(page.getByTestId("comments").getByTestId("comment-where"))).toBe("src/lines.txt:2");
    await shot(page, "inline-comment");

    // The agent's MCP tool lists it, with the path and line the reviewer clicked.
    const mcp = new Client({ name: "console-test", version: "1.0.0" });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${h.berth.server.httpUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${h.tokens.dev}` } } }));
    const call = async (name: string, args: Record<string, unknown>) => {
      const r = (await mcp.callTool({ name, arguments: args })) as CallToolResult;
      const body = r.content.map((c) => (c.type === "text" ? c.text : "")).join("");
      expect(r.isError ?? false, body).toBe(false);
      return JSON.parse(body) as { comments: { id: string; path?: string; line?: number; body: string; author: string }[] };
    };
    try {
      const listed = await call("list_comments", { session_id: ws.sessionId });
      expect(listed.comments.map((c) => [c.path, c.line, c.body, c.author])).toEqual([["src/lines.txt", 2, "two should be three", "ops"]]);

      // Sent back for changes from the page; the agent's next berth run reads the comment and acts on it.
      await page.getByTestId("to-draft").click();
      await expect.poll(() => text(page.getByTestId("changeset-state")), WAIT).toBe("draft");
      const script = 'cat "$BERTH_COMMENTS"; sed -i s/two/three/ src/lines.txt';
      const run = await promisify(execFile)(process.execPath, [BIN, "run", ws.sessionId, "--server", h.berth.server.httpUrl, "--", "sh", "-c", script], {
        cwd: ROOT,
        env: cliEnv({ BERTH_TOKEN: h.tokens.dev }),
      });
      const given = JSON.parse(run.stdout) as { changeset_id: string; comments: { id: string; path: string; line: number; body: string }[] };
      expect(given.changeset_id).toBe(ws.changesetId);
      expect(given.comments.map((c) => [c.id, c.path, c.line, c.body])).toEqual([[listed.comments[0]!.id, "src/lines.txt", 2, "two should be three"]]);
      // The fix shows in the diff, the thread still beside line 2; the agent resolves it over MCP.
      await expect.poll(() => text(file.locator('.dl[data-new="2"] .code')), WAIT).toBe("+three");
      await call("resolve_comment", { comment_id: listed.comments[0]!.id });
      await expect.poll(() => text(file.locator('.dl[data-new="2"] + [data-testid=inline-comments]').getByTestId("comment-resolved")), WAIT).toContain("resolved by dev");
      expect((await call("list_comments", { session_id: ws.sessionId })).comments).toEqual([]);
    } finally {
      await mcp.close();
    }
  }, 180_000);

  it("keeps a comment being typed under its line, text and all, when the agent's write redraws the diff", async () => {
    const ws = (await h.as("dev").createWorkspace({ repoId, mode: WorkspaceMode.PERSISTENT, intent: "a change still being written" })).workspace!;
    await h.as("dev").writeFile({ sessionId: ws.sessionId, path: "src/typing.txt", content: utf8("one\ntwo\n") });
    const page = await h.browser.open(url(`changeset/${ws.changesetId}`), h.tokens.ops);
    const diff = page.getByTestId("changeset-diff");
    await expect.poll(() => diff.getAttribute("data-rendered"), WAIT).toBe("true");
    const file = page.locator('[data-testid=diff-file][data-path="src/typing.txt"]');
    await file.locator('.dl[data-new="2"] [data-testid=diff-line-number]').click();
    await page.getByTestId("inline-comment-body").fill("half a thought");
    // The agent writes another file: the diff is drawn again from DiffChangeset.
    await h.as("dev").writeFile({ sessionId: ws.sessionId, path: "src/later.txt", content: utf8("later\n") });
    await expect.poll(() => page.locator('[data-testid=diff-file][data-path="src/later.txt"]').count(), WAIT).toBe(1);
    const form = file.locator('.dl[data-new="2"] + [data-testid=inline-comment-form]');
    expect(await form.count()).toBe(1);
    expect(await form.getByTestId("inline-comment-body").inputValue()).toBe("half a thought");
    await form.getByTestId("inline-comment-add").click();
    await expect.poll(() => text(file.locator('.dl[data-new="2"] + [data-testid=inline-comments]').getByTestId("comment-text")), WAIT).toBe("half a thought");
  }, 120_000);
});
