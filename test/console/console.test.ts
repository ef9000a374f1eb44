/**
 * The web console in headless Chromium (issue 17), against a real server with token auth: what a
 * person sees change while agents work, without reloading the page. BERTH_SCREENSHOTS=1 also
 * writes the screenshots of docs/console/ (docs/console.md).
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Locator, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { TurnService } from "../../gen/berth/v1/turn_service_pb.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { failure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";
import { gitRepo } from "../overlay/helpers.js";
import { launchBrowser, type ConsoleBrowser } from "./browser.js";

const sha = (t: string) => createHash("sha256").update(t).digest("hex");
const TOKENS = { alice: randomBytes(16).toString("hex"), ops: randomBytes(16).toString("hex") };
const SHOTS = process.env.BERTH_SCREENSHOTS === "1" ? path.resolve("docs/console") : undefined;
/** Generous: the machine may be loaded; each wait ends as soon as the page shows the change. */
const WAIT = { timeout: 20_000, interval: 50 };
const text = (l: Locator) => l.count().then((n) => (n > 0 ? l.first().textContent() : null));
const attr = (l: Locator, name: string) => l.count().then((n) => (n > 0 ? l.first().getAttribute(name) : null));
const shown = (l: Locator) => l.first().waitFor({ state: "visible", timeout: WAIT.timeout });

needs({ chromium: true })("the web console", () => {
  let berth: TestBerth;
  let browser: ConsoleBrowser;
  let repoId: string;
  let env: Record<string, string>;
  const as = (who: keyof typeof TOKENS) => createGrpcClient(WorkspaceService, berth.server.grpcAddress, { metadata: { authorization: `Bearer ${TOKENS[who]}` } });
  const sessionsUrl = (state: string) => `${berth.server.httpUrl}/#/sessions/${repoId}/${state}`;
  const row = (page: Page, sessionId: string) => page.locator(`[data-testid="session-row"][data-session="${sessionId}"]`);
  const shot = async (page: Page, name: string, fullPage = false) => {
    if (!SHOTS) return;
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage });
  };
  const create = async (intent: string) =>
    (await as("alice").createWorkspace({ repoId, mode: WorkspaceMode.PERSISTENT, baseCommit: "main", intent })).workspace!;

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "berth-console-"));
    const file = path.join(dir, "tokens.json");
    writeFileSync(file, JSON.stringify({
      tokens: [
        { sha256: sha(TOKENS.alice), agent_id: "alice", repos: ["*"] },
        { sha256: sha(TOKENS.ops), agent_id: "ops", roles: ["agent", "admin"] },
      ],
    }));
    env = { BERTH_AUTH: "token", BERTH_AUTH_TOKENS_FILE: file, BERTH_ENV_ROOT: path.join(dir, "envs") };
    berth = await startBerth({ env });
    repoId = (await as("ops").registerRepository({ name: "console-demo" })).repository!.id;
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await berth?.close();
    // After the restart test the server runs on the first one's database, which close() leaves.
    await berth?.database.drop().catch(() => undefined);
  });

  it("shows a session created by an RPC without a reload, then its strand in the tail and in the session list", async () => {
    const page = await browser.open(sessionsUrl("active"), TOKENS.ops);
    await expect.poll(() => text(page.getByTestId("who")), WAIT).toBe("admin");
    const ws = await create("fix the flaky test");
    const r = row(page, ws.sessionId);
    await shown(r);
    await expect.poll(() => text(r), WAIT).toContain("fix the flaky test");
    await expect.poll(() => text(r), WAIT).toContain("alice");
    await expect.poll(() => text(r), WAIT).toContain(ws.changesetId.slice(0, 8));
    await expect.poll(() => text(page.getByTestId("tail-state")), WAIT).toBe("live");
    for (const intent of ["write the release notes", "refactor the scheduler"]) await shown(row(page, (await create(intent)).sessionId));
    await shot(page, "sessions");

    await as("alice").strandSession({ sessionId: ws.sessionId, reason: "agent went away" });
    await shown(page.locator(`#tail li[data-kind="session.stranded"][data-session="${ws.sessionId}"]`));
    // The active list drops it in place; the stranded tab lists it with its reason.
    await expect.poll(() => r.count(), WAIT).toBe(0);
    await page.getByTestId("tab-stranded").click();
    await expect.poll(() => attr(row(page, ws.sessionId), "data-state"), WAIT).toBe("stranded");
    await expect.poll(() => text(row(page, ws.sessionId)), WAIT).toContain("agent went away");
  });

  it("lets an admin resume a stranded session with its button, and the resumed session is the agent's", async () => {
    const ws = await create("resume me");
    await as("alice").strandSession({ sessionId: ws.sessionId, reason: "lunch" });
    const page = await browser.open(sessionsUrl("stranded"), TOKENS.ops);
    const r = row(page, ws.sessionId);
    await shown(r);
    await shot(page, "stranded");
    await r.getByTestId("resume").click();
    await shown(page.locator(`#tail li[data-kind="session.resumed"]`).first());
    await expect.poll(() => r.count(), WAIT).toBe(0);
    const old = await failure(as("alice").getWorkspace({ sessionId: ws.sessionId }));
    expect(old).toMatchObject({ code: "FAILED_PRECONDITION", reason: "SESSION_RESUMED" });
    const resumed = (await as("alice").getWorkspace({ sessionId: old.metadata.new_session_id! })).workspace!;
    expect(resumed).toMatchObject({ workspaceId: ws.workspaceId, agentId: "alice" });
    await page.getByTestId("tab-active").click();
    await expect.poll(() => attr(row(page, resumed.sessionId), "data-state"), WAIT).toBe("active");
  });

  it("shows one session's files (overlay over base, deleted marked), claims and turns, live", async () => {
    const src = gitRepo();
    const withBase = (await as("ops").registerRepository({ name: "console-git", sourcePath: src.dir })).repository!.id;
    const ws = (await as("alice").createWorkspace({ repoId: withBase, mode: WorkspaceMode.PERSISTENT, intent: "write some files" })).workspace!;
    const alice = as("alice");
    await alice.writeFile({ sessionId: ws.sessionId, path: "src/app.ts", content: new TextEncoder().encode("export function main() {}\n") });
    await alice.deleteFile({ sessionId: ws.sessionId, path: "README.md", expectedHash: createHash("sha256").update("# demo\n").digest("hex") });
    // A whole-file claim of a file not written yet (a reservation; a named symbol must exist).
    await alice.claimSymbols({ sessionId: ws.sessionId, symbols: [{ path: "src/other.ts", symbol: "" }] });
    const turns = createGrpcClient(TurnService, berth.server.grpcAddress, { metadata: { authorization: `Bearer ${TOKENS.alice}` } });
    const turn = await turns.beginTurn({ sessionId: ws.sessionId });
    const page = await browser.open(`${berth.server.httpUrl}/#/session/${ws.sessionId}`, TOKENS.ops);
    await expect.poll(() => attr(page.locator('[data-testid="file-row"][data-path="src/app.ts"]'), "data-source"), WAIT).toBe("overlay");
    const facts = await text(page.getByTestId("workspace"));
    expect(facts).toContain("write some files");
    expect(facts).toContain(ws.changesetId);
    expect(facts).not.toContain("[object");
    expect(await attr(page.locator('[data-testid="file-row"][data-path="src/f01.txt"]'), "data-source")).toBe("base");
    expect(await attr(page.locator('[data-testid="file-row"][data-path="README.md"]'), "data-deleted")).toBe("true");
    expect(await text(page.locator('[data-testid="file-row"][data-path="README.md"]'))).toContain("deleted");
    // The explicit claim, and those the write and the delete took.
    await expect.poll(() => text(page.getByTestId("claims")), WAIT).toContain("src/other.ts");
    for (const p of ["src/other.ts", "src/app.ts", "README.md"]) expect(await text(page.getByTestId("claims"))).toContain(p);
    await expect.poll(() => page.getByTestId("turn-row").count(), WAIT).toBe(1);
    await expect.poll(() => text(page.getByTestId("turn-row")), WAIT).toContain("running");
    // A later write shows up without a reload.
    await alice.writeFile({ sessionId: ws.sessionId, path: "docs/notes.md", content: new TextEncoder().encode("# notes\n") });
    await shown(page.locator('[data-testid="file-row"][data-path="docs/notes.md"]'));
    await shot(page, "session", true);
    await turns.endTurn({ turnId: turn.turnId, outcome: 1 });
    turns.close();
  });

  it("shows an admin the turn pool", async () => {
    const page = await browser.open(`${berth.server.httpUrl}/#/pool`, TOKENS.ops);
    await expect.poll(() => text(page.getByTestId("pool-capacity")), WAIT).toContain("capacity");
    await shot(page, "pool");
  });

  it("shows a non-admin the sessions without admin buttons, and no pool", async () => {
    const ws = await create("an agent's view");
    const page = await browser.open(sessionsUrl("active"), TOKENS.alice);
    await expect.poll(() => text(page.getByTestId("who")), WAIT).toBe("agent");
    await shown(row(page, ws.sessionId));
    expect(await page.locator('[data-testid="strand"], [data-testid="resume"], [data-testid="abandon"]').count()).toBe(0);
    expect(await page.getByRole("link", { name: "Turn pool" }).isVisible()).toBe(false);
    // A stranded one has no resume button either.
    await as("alice").strandSession({ sessionId: ws.sessionId });
    await page.getByTestId("tab-stranded").click();
    await shown(row(page, ws.sessionId));
    expect(await page.getByTestId("resume").count()).toBe(0);
  });

  it("keeps the token in the tab only and asks for one without it", async () => {
    const page = await browser.open(sessionsUrl("active"));
    await expect.poll(() => text(page.getByTestId("who")), WAIT).toBe("token needed");
    await expect.poll(() => text(page.getByTestId("status")), WAIT).toContain("unauthenticated");
    await page.getByLabel("bearer token").fill(TOKENS.alice);
    await page.getByRole("button", { name: "Use token" }).click();
    await expect.poll(() => text(page.getByTestId("who")), WAIT).toBe("agent");
    // A string: the test's TypeScript has no DOM types; this runs in the page.
    expect(await page.evaluate('[sessionStorage.getItem("berth.token") !== null, localStorage.length, document.cookie]')).toEqual([true, 0, ""]);
    await page.reload();
    await expect.poll(() => text(page.getByTestId("who")), WAIT).toBe("agent");
  });

  it("resumes the event tail after the server restarts, from the last seq it showed: nothing lost, nothing twice", async () => {
    const page = await browser.open(sessionsUrl("active"), TOKENS.alice);
    const before = await create("before the restart");
    await shown(page.locator(`#tail li[data-kind="session.created"][data-session="${before.sessionId}"]`));
    const { httpPort, grpcPort } = berth.server;
    await berth.stop();
    await expect.poll(() => text(page.getByTestId("tail-state")), WAIT).toMatch(/^disconnected|^resuming after \d+/);
    berth = await startBerth({ database: berth.database, env: { ...env, BERTH_HTTP_ADDR: `127.0.0.1:${httpPort}`, BERTH_ADDR: `127.0.0.1:${grpcPort}` } });
    const after = await create("after the restart");
    await shown(page.locator(`#tail li[data-kind="session.created"][data-session="${after.sessionId}"]`));
    await shown(row(page, after.sessionId));
    const seqs = await page.locator("#tail li").evaluateAll((lis) => lis.map((li) => li.getAttribute("data-seq")));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(await page.locator(`#tail li[data-kind="session.created"][data-session="${before.sessionId}"]`).count()).toBe(1);
  });

  it("pages a long session list, 50 a page: next and previous, and a new session lands on the last page only", async () => {
    const many = (await as("ops").registerRepository({ name: "console-many" })).repository!.id;
    const alice = as("alice");
    const made: string[] = [];
    for (let i = 0; i < 55; i++) made.push((await alice.createWorkspace({ repoId: many, mode: WorkspaceMode.EPHEMERAL, baseCommit: "main", intent: `task ${i}` })).workspace!.sessionId);
    const page = await browser.open(`${berth.server.httpUrl}/#/sessions/${many}/active`, TOKENS.alice);
    const rows = page.getByTestId("session-row");
    await expect.poll(() => rows.count(), WAIT).toBe(50);
    await shown(row(page, made[0]!));
    // A session created now belongs on page 2: page 1 re-reads itself and stays the same 50.
    const late = (await alice.createWorkspace({ repoId: many, mode: WorkspaceMode.EPHEMERAL, baseCommit: "main", intent: "late" })).workspace!.sessionId;
    await shown(page.locator(`#tail li[data-kind="session.created"][data-session="${late}"]`));
    expect(await rows.count()).toBe(50);
    expect(await row(page, late).count()).toBe(0);
    await page.getByTestId("next-page").click();
    await shown(row(page, late));
    await expect.poll(() => rows.count(), WAIT).toBe(6);
    expect(await page.getByTestId("next-page").isDisabled()).toBe(true);
    await page.getByTestId("prev-page").click();
    await shown(row(page, made[0]!));
    await expect.poll(() => rows.count(), WAIT).toBe(50);
  });
});
