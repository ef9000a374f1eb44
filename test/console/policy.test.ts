/**
 * What the console may not do (issue 29), in headless Chromium against a real server with token
 * auth: under independent review an author's page offers no Approve and the server refuses a
 * forced one, while a reviewer's page approves; and a session watched in the console — its page
 * reloaded again and again by an admin — still strands on time once its agent stops calling.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { ChangesetState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { failure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";
import { gitRepo } from "../overlay/helpers.js";
import { startConsole, text, WAIT, type ConsoleHarness } from "./harness.js";

const LEASE_MS = 1500;
const GC_MS = 200;
/** Lease, a GC period, an activity flush (at most 2 s) and scheduling on a loaded machine. */
const STRANDED_WITHIN_MS = LEASE_MS + GC_MS + 2000 + 6000;

needs({ chromium: true })("the console under the server's rules", () => {
  let h: ConsoleHarness<"ops" | "alice" | "rita">;
  let repoId: string;
  const url = (hash: string) => `${h.berth.server.httpUrl}/#/${hash}`;

  beforeAll(async () => {
    h = await startConsole(
      { ops: { roles: ["agent", "admin"] }, alice: {}, rita: { roles: ["reviewer"] } },
      { BERTH_SESSION_LEASE_MS: String(LEASE_MS), BERTH_GC_INTERVAL_MS: String(GC_MS) },
    );
    // Registered without saying: independent review is on by default.
    repoId = (await h.as("ops").registerRepository({ name: "policy-demo", sourcePath: gitRepo().dir })).repository!.id;
  });
  afterAll(async () => {
    await h?.close();
  });

  it("offers the author no Approve under independent review (the server refuses it if forced) and lets a reviewer approve from the page", async () => {
    const alice = h.as("alice");
    const ws = (await alice.createWorkspace({ repoId, mode: WorkspaceMode.PERSISTENT, intent: "reviewed by someone else" })).workspace!;
    await alice.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.SUBMITTED });
    await alice.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.VERIFYING });
    const hash = `changeset/${ws.changesetId}`;
    const author = await h.browser.open(url(hash), h.tokens.alice);
    await expect.poll(() => text(author.getByTestId("changeset-state")), WAIT).toBe("verifying");
    await expect.poll(() => author.getByTestId("to-rejected").count(), WAIT).toBe(1);
    expect(await author.getByTestId("to-approved").count()).toBe(0);
    const forced = await failure(alice.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.APPROVED }));
    expect([forced.code, forced.reason]).toEqual(["PERMISSION_DENIED", "INDEPENDENT_REVIEW_REQUIRED"]);

    const reviewer = await h.browser.open(url(hash), h.tokens.rita);
    await expect.poll(() => reviewer.getByTestId("to-approved").count(), WAIT).toBe(1);
    await reviewer.getByTestId("to-approved").click();
    await expect.poll(() => text(reviewer.getByTestId("changeset-state")), WAIT).toBe("approved");
    // The author's page follows, and still offers no merge: MERGED is the reviewer's too.
    await expect.poll(() => text(author.getByTestId("changeset-state")), WAIT).toBe("approved");
    expect(await author.getByTestId("to-merged").count()).toBe(0);
    expect(await text(reviewer.getByTestId("history"))).toContain("rita");
  }, 120_000);

  it("strands a session on time while an admin keeps reloading its page", async () => {
    // An ephemeral session: it strands when its agent's lease runs out (docs/lifecycle.md).
    const ws = (await h.as("alice").createWorkspace({ repoId, mode: WorkspaceMode.EPHEMERAL, intent: "its agent goes away" })).workspace!;
    await h.as("alice").heartbeat({ sessionId: ws.sessionId });
    const since = Date.now();
    const page = await h.browser.open(url(`session/${ws.sessionId}`), h.tokens.ops);
    const state = () => text(page.locator('[data-testid="workspace"] dd').nth(3));
    await page.locator('[data-testid="workspace"]').waitFor({ timeout: WAIT.timeout });
    let reloads = 0;
    for (;;) {
      const now = await state();
      if (now !== null && !now.startsWith("active")) break;
      expect(Date.now() - since, `still active after ${reloads} reloads`).toBeLessThan(STRANDED_WITHIN_MS);
      await page.reload();
      await page.locator('[data-testid="workspace"]').waitFor({ timeout: WAIT.timeout });
      reloads++;
    }
    expect(await state()).toContain("stranded");
  }, 120_000);
});
