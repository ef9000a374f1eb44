/**
 * Reviewing in the console (issue 29), in headless Chromium against a real server with token
 * auth: a session's file diffs, a changeset's page with its combined diff, the decisions taken
 * from it. BERTH_SCREENSHOTS=1 also writes the screenshots of docs/console.md.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ChangesetState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { failure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";
import { gitRepo, tsModule, utf8 } from "../overlay/helpers.js";
import { startBerth } from "../support/berth.js";
import { launchBrowser } from "./browser.js";
import { attr, shot, shown, startConsole, text, WAIT, type ConsoleHarness } from "./harness.js";

const sha = (b: Uint8Array | string) => createHash("sha256").update(b).digest("hex");

needs({ chromium: true })("reviewing in the web console", () => {
  let h: ConsoleHarness<"ops" | "alice" | "bob" | "mallory">;
  let repoId: string;
  let repoDir: string;
  const url = (hash: string) => `${h.berth.server.httpUrl}/#/${hash}`;
  const file = (page: Page, p: string) => page.locator(`[data-testid="diff-file"][data-path="${p}"]`);
  const session = async (who: "alice" | "bob", intent: string, changesetId?: string) =>
    (await h.as(who).createWorkspace({ repoId, mode: WorkspaceMode.PERSISTENT, intent, ...(changesetId ? { changesetId } : {}) })).workspace!;

  beforeAll(async () => {
    h = await startConsole({ ops: { roles: ["agent", "admin"] }, alice: {}, bob: {}, mallory: {} });
    repoDir = gitRepo().dir;
    repoId = (await h.as("ops").registerRepository({ name: "review-demo", sourcePath: repoDir })).repository!.id;
  });
  afterAll(async () => {
    await h?.close();
  });

  it("shows a changed file's diff against the base on a click: lines added and removed, a binary file, a rename as one", async () => {
    const ws = await session("alice", "edit a few files");
    const alice = h.as("alice");
    await alice.writeFile({ sessionId: ws.sessionId, path: "src/f01.txt", content: utf8("file one\nand a second line\n") });
    await alice.writeFile({ sessionId: ws.sessionId, path: "logo.bin", content: new Uint8Array([0x89, 0x50, 0x00, 0x01, 0x02, 0x00, 0xff]) });
    await alice.deleteFile({ sessionId: ws.sessionId, path: "src/f02.txt", expectedHash: sha("file 2\n") });
    await alice.writeFile({ sessionId: ws.sessionId, path: "src/moved.txt", content: utf8("file 2\n") });
    const page = await h.browser.open(url(`session/${ws.sessionId}`), h.tokens.alice);
    const box = page.getByTestId("file-diff");

    await page.locator('[data-testid="file-row"][data-path="src/f01.txt"] [data-testid="file-diff-link"]').click();
    await expect.poll(() => attr(box, "data-rendered"), WAIT).toBe("true");
    expect(await text(file(page, "src/f01.txt").getByTestId("diff-change"))).toBe("modified");
    const lines = (kind: string) => file(page, "src/f01.txt").locator(`.dl[data-kind="${kind}"] .code`).allTextContents();
    expect(await lines("del")).toEqual(["-file 1"]);
    expect(await lines("add")).toEqual(["+file one", "+and a second line"]);
    expect(await attr(file(page, "src/f01.txt").locator('.dl[data-kind="add"]').last(), "data-new")).toBe("2");
    await shot(page, "file-diff", true);

    await page.locator('[data-testid="file-row"][data-path="logo.bin"] [data-testid="file-diff-link"]').click();
    await shown(file(page, "logo.bin").getByTestId("diff-binary"));
    expect(await file(page, "logo.bin").locator(".dl").count()).toBe(0);

    // A rename is one entry, whichever of its two paths is clicked.
    for (const p of ["src/moved.txt", "src/f02.txt"]) {
      await page.locator(`[data-testid="file-row"][data-path="${p}"] [data-testid="file-diff-link"]`).click();
      await expect.poll(() => text(file(page, "src/moved.txt").getByTestId("diff-path")), WAIT).toBe("src/f02.txt → src/moved.txt");
      expect(await text(file(page, "src/moved.txt").getByTestId("diff-change"))).toBe("renamed");
      expect(await page.getByTestId("diff-file").count()).toBe(1);
    }
    // A path the base holds unchanged has no link.
    expect(await page.locator('[data-testid="file-row"][data-path="src/f03.txt"] [data-testid="file-diff-link"]').count()).toBe(0);
  });

  it("draws a 10,000-line diff without freezing the page: it answers while the lines come in", async () => {
    const ws = await session("alice", "a long file");
    const long = Array.from({ length: 10_000 }, (_, i) => `line ${i + 1} of a long generated file`).join("\n") + "\n";
    await h.as("alice").writeFile({ sessionId: ws.sessionId, path: "gen/long.txt", content: utf8(long) });
    const page = await h.browser.open(url(`session/${ws.sessionId}`), h.tokens.alice);
    const box = page.getByTestId("file-diff");
    await page.locator('[data-testid="file-row"][data-path="gen/long.txt"] [data-testid="file-diff-link"]').click();
    // While it draws, the page answers a script and a click within a generous bound (a page
    // that drew 10,000 rows in one task would hold both until it finished).
    let slowest = 0;
    for (;;) {
      const t0 = Date.now();
      const done = await page.evaluate('document.querySelector("[data-testid=file-diff]").dataset.rendered === "true"');
      slowest = Math.max(slowest, Date.now() - t0);
      if (done) break;
      await page.getByLabel("bearer token").click({ timeout: 5_000 });
    }
    expect(slowest).toBeLessThan(2_000);
    expect(await box.locator('.dl[data-kind="add"]').count()).toBe(10_000);
    expect(await attr(box.locator('.dl[data-kind="add"]').last(), "data-new")).toBe("10000");
  });

  it("shows a changeset of two sessions on its own page, linked from the session: both sessions' changes combined, the path they differ on marked", async () => {
    const a = await session("alice", "the gamma half");
    const b = await session("alice", "the delta half", a.changesetId);
    const alice = h.as("alice");
    await alice.writeFile({ sessionId: a.sessionId, path: "a.txt", content: utf8("from a\n") });
    await alice.writeFile({ sessionId: b.sessionId, path: "b.txt", content: utf8("from b\n") });
    // Different functions of one file (claims let both write it), so the two versions differ.
    await alice.writeFile({ sessionId: a.sessionId, path: "src/util.ts", content: utf8(tsModule({ gamma: 41 })) });
    await alice.writeFile({ sessionId: b.sessionId, path: "src/util.ts", content: utf8(tsModule({ delta: 42 })) });
    const page = await h.browser.open(url(`session/${b.sessionId}`), h.tokens.alice);
    await page.getByTestId("workspace").getByTestId("changeset-link").click();
    await expect.poll(() => page.evaluate("location.hash"), WAIT).toBe(`#/changeset/${a.changesetId}`);
    const box = page.getByTestId("changeset-diff");
    await expect.poll(() => attr(box, "data-rendered"), WAIT).toBe("true");
    expect(await page.getByTestId("diff-file").evaluateAll((els) => els.map((e) => e.getAttribute("data-path")))).toEqual(["a.txt", "b.txt", "src/util.ts"]);
    expect(await file(page, "a.txt").locator('.dl[data-kind="add"] .code').allTextContents()).toEqual(["+from a"]);
    expect(await file(page, "b.txt").locator('.dl[data-kind="add"] .code').allTextContents()).toEqual(["+from b"]);
    expect(await attr(file(page, "src/util.ts"), "data-conflict")).toBe("true");
    expect(await attr(file(page, "a.txt"), "data-conflict")).toBe("false");
    expect(await text(file(page, "src/util.ts").getByTestId("diff-conflict"))).toContain(a.sessionId.slice(0, 8));
    expect(await text(file(page, "src/util.ts").getByTestId("diff-conflict"))).toContain(b.sessionId.slice(0, 8));
    expect(await text(page.getByTestId("conflicts"))).toContain("src/util.ts");
    // A later write of one of its sessions shows up without a reload.
    await alice.writeFile({ sessionId: b.sessionId, path: "c.txt", content: utf8("late\n") });
    await shown(file(page, "c.txt"));
  });

  it("lets a reviewer take the changeset's decisions from its page: a second reviewer's page follows live, a non-member sees no buttons, the merge lands in git", async () => {
    const ws = await session("alice", "a reviewed change");
    await h.as("alice").writeFile({ sessionId: ws.sessionId, path: "src/f04.txt", content: utf8("file four, reviewed\n") });
    const hash = `changeset/${ws.changesetId}`;
    const page = await h.browser.open(url(hash), h.tokens.ops);
    const second = await h.browser.open(url(hash), h.tokens.ops);
    const outsider = await h.browser.open(url(hash), h.tokens.mallory);
    const state = (p: Page) => text(p.getByTestId("changeset-state"));
    await expect.poll(() => state(page), WAIT).toBe("draft");
    for (const [button, next] of [["to-submitted", "submitted"], ["to-verifying", "verifying"]] as const) {
      await page.getByTestId(button).click();
      await expect.poll(() => state(page), WAIT).toBe(next);
    }
    // A rejection needs its reason; without one nothing is sent.
    await page.getByTestId("to-rejected").click();
    await expect.poll(() => text(page.getByTestId("refusal")), WAIT).toContain("Say why");
    expect(await state(page)).toBe("verifying");
    await page.getByTestId("decision-reason").fill("looks right");
    await page.getByTestId("to-approved").click();
    await expect.poll(() => state(page), WAIT).toBe("approved");
    // The other reviewer's page moved with it, without a reload.
    await expect.poll(() => state(second), WAIT).toBe("approved");
    await expect.poll(() => second.getByTestId("to-merged").count(), WAIT).toBe(1);
    await expect.poll(() => text(second.getByTestId("history")), WAIT).toContain("looks right");
    expect(await text(second.getByTestId("history"))).toContain("verifying → approved");
    expect(await text(second.getByTestId("history"))).toContain("ops");
    await shot(page, "changeset", true);

    // An agent not on the changeset is refused it and sees no buttons; forcing the RPC is refused too.
    await expect.poll(() => text(outsider.getByTestId("status")), WAIT).toContain("permission_denied");
    expect(await outsider.getByTestId("decisions").count()).toBe(0);
    expect((await failure(h.as("mallory").transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED }))).code).toBe("PERMISSION_DENIED");

    await page.getByTestId("to-merged").click();
    await expect.poll(() => state(page), WAIT).toBe("merged");
    await expect.poll(() => text(page.getByTestId("merge-result")), WAIT).toContain("Merged into refs/heads/main");
    expect(await text(page.getByTestId("merged-into"))).toBe("refs/heads/main");
    expect(await page.getByTestId("decisions").count()).toBe(0);
    expect(execFileSync("git", ["-C", repoDir, "show", "main:src/f04.txt"], { encoding: "utf8" })).toBe("file four, reviewed\n");
    expect(execFileSync("git", ["-C", repoDir, "log", "--format=%s", "main"], { encoding: "utf8" })).toContain("a reviewed change");
  }, 120_000);

  it("shows a conflicting merge's paths and leaves the changeset approved", async () => {
    const ops = h.as("ops");
    const approve = async (changesetId: string) => {
      for (const toState of [ChangesetState.SUBMITTED, ChangesetState.VERIFYING, ChangesetState.APPROVED]) await ops.transitionChangeset({ changesetId, toState });
    };
    const first = await session("alice", "one side");
    await h.as("alice").writeFile({ sessionId: first.sessionId, path: "src/f06.txt", content: utf8("one side\n") });
    await approve(first.changesetId);
    await ops.transitionChangeset({ changesetId: first.changesetId, toState: ChangesetState.MERGED });
    // The same file changed on the base the first changeset left behind.
    const other = (await h.as("bob").createWorkspace({ repoId, mode: WorkspaceMode.PERSISTENT, intent: "the other side", baseCommit: first.baseCommit })).workspace!;
    await h.as("bob").writeFile({ sessionId: other.sessionId, path: "src/f06.txt", content: utf8("the other side\n") });
    await approve(other.changesetId);
    const page = await h.browser.open(url(`changeset/${other.changesetId}`), h.tokens.ops);
    await page.getByTestId("to-merged").click();
    await expect.poll(() => text(page.getByTestId("refusal")), WAIT).toContain("MERGE_CONFLICT");
    expect(await page.getByTestId("conflict-paths").locator("li").allTextContents()).toEqual(["src/f06.txt"]);
    expect(await text(page.getByTestId("changeset-state"))).toBe("approved");
    await shot(page, "merge-conflict", true);
  }, 60_000);

  it("lists a repository's changesets by state, what waits for review first, live (50 a page, the sessions' pager)", async () => {
    const listed = (await h.as("ops").registerRepository({ name: "review-list" })).repository!.id;
    const made = async (intent: string) => (await h.as("alice").createWorkspace({ repoId: listed, mode: WorkspaceMode.EPHEMERAL, baseCommit: "main", intent })).workspace!.changesetId;
    const drafts = [await made("a draft"), await made("another draft")];
    const waiting = await made("submitted one");
    await h.as("alice").transitionChangeset({ changesetId: waiting, toState: ChangesetState.SUBMITTED });
    const page = await h.browser.open(url(`sessions/${listed}/active`), h.tokens.ops);
    await page.getByTestId("repo-changesets").click();
    const rows = page.getByTestId("changeset-row");
    await expect.poll(() => rows.evaluateAll((els) => els.map((e) => e.getAttribute("data-changeset"))), WAIT).toEqual([waiting]);
    await shot(page, "changesets");
    // Submitting a draft brings it here without a reload.
    await h.as("alice").transitionChangeset({ changesetId: drafts[0]!, toState: ChangesetState.SUBMITTED });
    await expect.poll(() => rows.count(), WAIT).toBe(2);
    await page.getByTestId("tab-draft").click();
    await expect.poll(() => rows.evaluateAll((els) => els.map((e) => e.getAttribute("data-changeset"))), WAIT).toEqual([drafts[1]]);
    await rows.first().getByTestId("changeset-link").click();
    await expect.poll(() => text(page.getByTestId("changeset-state")), WAIT).toBe("draft");
  });

  it("keeps the tail to the repository shown, links its entries to their session and changeset, and shows a transition's from → to", async () => {
    const other = (await h.as("ops").registerRepository({ name: "review-other" })).repository!.id;
    const page = await h.browser.open(url(`sessions/${repoId}/active`), h.tokens.alice);
    const elsewhere = (await h.as("alice").createWorkspace({ repoId: other, mode: WorkspaceMode.EPHEMERAL, baseCommit: "main", intent: "elsewhere" })).workspace!;
    const here = await session("alice", "here");
    const entry = (kind: string, s: string) => page.locator(`#tail li[data-kind="${kind}"][data-session="${s}"]`);
    await shown(entry("session.created", here.sessionId));
    // Delivered (the tail keeps it) but not shown while this repository is.
    expect(await entry("session.created", elsewhere.sessionId).count()).toBe(1);
    expect(await entry("session.created", elsewhere.sessionId).isVisible()).toBe(false);
    expect(await text(page.getByTestId("tail-scope"))).toBe("of this repository");

    await h.as("alice").transitionChangeset({ changesetId: here.changesetId, toState: ChangesetState.SUBMITTED, reason: "ready" });
    const moved = page.locator(`#tail li[data-kind="changeset.transitioned"][data-changeset="${here.changesetId}"]`);
    await shown(moved);
    expect(await text(moved.getByTestId("tail-transition"))).toBe(" draft → submitted");
    await moved.getByTestId("tail-changeset").click();
    await expect.poll(() => page.evaluate("location.hash"), WAIT).toBe(`#/changeset/${here.changesetId}`);
    await entry("session.created", here.sessionId).getByTestId("tail-session").click();
    await expect.poll(() => page.evaluate("location.hash"), WAIT).toBe(`#/session/${here.sessionId}`);
    // The repositories view is about none: every event shows.
    await page.getByRole("link", { name: "Repositories" }).click();
    await expect.poll(() => entry("session.created", elsewhere.sessionId).isVisible(), WAIT).toBe(true);
    expect(await text(page.getByTestId("tail-scope"))).toBe("");
  });

  it("writes dates in the browser's locale: 24-hour where the locale is", async () => {
    const ws = await session("alice", "dates");
    const created = async (locale: string) => {
      const context = await h.browser.browser.newContext({ locale });
      try {
        const page = await context.newPage();
        await page.goto(url(`session/${ws.sessionId}`));
        await page.getByLabel("bearer token").fill(h.tokens.alice);
        await page.getByRole("button", { name: "Use token" }).click();
        const facts = page.getByTestId("workspace");
        await expect.poll(() => text(facts), WAIT).toContain("dates");
        return await facts.locator("dt:text-is('Created') + dd").textContent();
      } finally {
        await context.close();
      }
    };
    expect(await created("en-US")).toMatch(/\d{1,2}:\d{2}:\d{2}\s?[AP]M/);
    const gb = await created("en-GB");
    expect(gb).toMatch(/\d{2}:\d{2}:\d{2}/);
    expect(gb).not.toMatch(/[AP]M/i);
    expect(await created("de-DE")).toMatch(/\d{2}\.\d{2}\.\d{4}, \d{2}:\d{2}:\d{2}/);
  });
});

needs({ chromium: true })("the web console with auth off", () => {
  it("shows no token box and no admin label", async () => {
    const berth = await startBerth();
    const browser = await launchBrowser();
    try {
      const page = await browser.open(`${berth.server.httpUrl}/#/repositories`);
      await expect.poll(() => page.evaluate("document.body.dataset.auth"), WAIT).toBe("off");
      expect(await page.getByLabel("bearer token").isVisible()).toBe(false);
      expect(await page.getByTestId("who").isVisible()).toBe(false);
      // And the admin's pages are there.
      expect(await page.getByRole("link", { name: "Turn pool" }).isVisible()).toBe(true);
    } finally {
      await browser.close();
      await berth.close();
    }
  });
});
