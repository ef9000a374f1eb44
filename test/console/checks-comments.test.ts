/**
 * The changeset page's checks and review comments (issue 29), in headless Chromium against a real
 * server with token auth: a failing check's output on the page and the changeset kept from
 * APPROVED; a reviewer's comment on a line reaching the agent, shown live on a second page, and
 * resolved by the agent. BERTH_SCREENSHOTS=1 also writes the screenshots of docs/console.md.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { needs } from "../support/services.js";
import { gitRepo, utf8 } from "../overlay/helpers.js";
import { shot, startConsole, text, WAIT, type ConsoleHarness } from "./harness.js";

needs({ chromium: true, bwrap: true })("checks and comments on the changeset page", () => {
  let h: ConsoleHarness<"ops" | "alice">;
  let repoId: string;
  const url = (hash: string) => `${h.berth.server.httpUrl}/#/${hash}`;

  beforeAll(async () => {
    h = await startConsole({ ops: { roles: ["agent", "admin"] }, alice: {} });
    repoId = (await h.as("ops").registerRepository({ name: "checks-demo", sourcePath: gitRepo().dir })).repository!.id;
  });
  afterAll(async () => {
    await h?.close();
  });

  const submitted = async (intent: string, file: string) => {
    const ws = (await h.as("alice").createWorkspace({ repoId, mode: WorkspaceMode.PERSISTENT, intent })).workspace!;
    await h.as("alice").writeFile({ sessionId: ws.sessionId, path: file, content: utf8("one\ntwo\n") });
    await h.as("alice").transitionChangeset({ changesetId: ws.changesetId, toState: 2 /* SUBMITTED */ });
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
    await expect.poll(() => text(page.getByTestId("comments")), WAIT).toContain("No comments");
    await page.getByTestId("comment-path").fill("src/new.txt");
    await page.getByTestId("comment-line").fill("2");
    await page.getByTestId("comment-body").fill("rename two to three");
    await page.getByTestId("comment-add").click();
    await expect.poll(() => text(page.getByTestId("comment-where")), WAIT).toBe("src/new.txt:2");

    // The agent gets it (what its MCP list_comments tool and berth run's BERTH_COMMENTS read).
    const open = await h.as("alice").listComments({ changesetId: ws.changesetId });
    expect(open.comments.map((c) => [c.path, c.line, c.body, c.author])).toEqual([["src/new.txt", 2, "rename two to three", "ops"]]);
    // The other page shows it without a reload.
    await expect.poll(() => text(second.getByTestId("comment-text")), WAIT).toBe("rename two to three");
    await shot(page, "comments", true);

    await h.as("alice").resolveComment({ commentId: open.comments[0]!.id });
    await expect.poll(() => text(second.getByTestId("comment-resolved")), WAIT).toContain("resolved by alice");
    expect(await second.getByTestId("comment-resolve").count()).toBe(0);
    // An empty comment is refused with the field named, and nothing is added.
    await page.getByTestId("comment-add").click();
    await expect.poll(() => text(page.getByTestId("comment-refusal")), WAIT).toContain("body");
    expect(await page.getByTestId("comment").count()).toBe(1);
  }, 120_000);
});
