/**
 * Issue 14, no lost work: what an agent did in a turn survives every way its session can end
 * (docs/lifecycle.md, "Leaving active: the running turn's directory"). Real servers, real
 * PostgreSQL, real git repositories, real directories; every check goes over gRPC except where
 * the database itself is the fact (overlay rows, stored events).
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TurnService } from "../../gen/berth/v1/turn_service_pb.js";
import { ChangesetState, LifecycleState, TurnOutcome, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { ManualClock } from "../../src/platform/clock.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { failure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";
import { makeGitRepo, newSession, startTurnBerth, type TurnBerth } from "./helpers.js";

const text = (b: Uint8Array) => new TextDecoder().decode(b);

function readdirNames(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir) : [];
}
const utf8 = (s: string) => new TextEncoder().encode(s);

async function eventsOf(b: TurnBerth, workspaceId: string, kind: string): Promise<{ reason: string; payload: Buffer }[]> {
  const r = await sql<{ reason: string; payload: Buffer }>`SELECT reason, payload FROM events WHERE workspace_id = ${workspaceId}::uuid AND kind = ${kind} ORDER BY staged`.execute(b.database.opened.db);
  return r.rows;
}

describe("issue 14: a running turn's edits survive its session's strand", () => {
  let b: TurnBerth;
  let source: string;

  beforeAll(async () => {
    source = makeGitRepo(12);
    b = await startTurnBerth();
  });
  afterAll(async () => {
    await b?.close();
    rmSync(source, { recursive: true, force: true });
  });

  it("(a) a running turn's edit, session stranded → ResumeSession → ReadFile returns it from the overlay", async () => {
    const { sessionId, workspaceId } = await newSession(b, source);
    const t = await b.turns.beginTurn({ sessionId });
    writeFileSync(path.join(t.environmentPath, "new-during-turn.txt"), "written by the running turn\n");
    writeFileSync(path.join(t.environmentPath, "README.md"), "# changed by the running turn\n");
    await b.ws.strandSession({ sessionId, reason: "test" });
    // No wait in the test: the resume itself waits for the capture of the running turn.
    const { newSessionId } = await b.ws.resumeSession({ deadSessionId: sessionId, agentId: "agent-a" });
    expect(text((await b.ws.readFile({ sessionId: newSessionId, path: "new-during-turn.txt" })).content)).toBe("written by the running turn\n");
    expect(text((await b.ws.readFile({ sessionId: newSessionId, path: "README.md" })).content)).toBe("# changed by the running turn\n");
    // Nothing was moved aside, and the turn ended as its session's strand says.
    expect(existsSync(path.join(b.envRoot, ".unsaved"))).toBe(false);
    expect((await failure(b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED }))).reason).toBe("TURN_NOT_RUNNING");
    expect(await eventsOf(b, workspaceId, "turn.capture_failed")).toEqual([]);
    // The resumed session's next turn starts from the captured content.
    const t2 = await b.turns.beginTurn({ sessionId: newSessionId });
    expect(existsSync(path.join(t2.environmentPath, "new-during-turn.txt"))).toBe(true);
    await b.turns.endTurn({ turnId: t2.turnId, outcome: TurnOutcome.COMPLETED });
  });

  it("a capture that cannot complete as the session is stranded is a turn.capture_failed event and a metric, the directory kept", async () => {
    const { sessionId, workspaceId } = await newSession(b, source);
    // Another session holds the file's claim: the stranded session's capture of it is refused (SYMBOL_LOCKED).
    const repoId = (await b.ws.getWorkspace({ sessionId })).workspace!.repoId;
    const other = (await b.ws.createWorkspace({ repoId, agentId: "agent-b", mode: WorkspaceMode.PERSISTENT })).workspace!;
    const t = await b.turns.beginTurn({ sessionId });
    const claimed = readdirSync(path.join(t.environmentPath, "pkg0", "mod0")).find((f) => f.endsWith(".ts"))!;
    const rel = `pkg0/mod0/${claimed}`;
    await b.ws.writeFile({ sessionId: other.sessionId, path: rel, content: utf8("export const taken = 1;\n") });
    writeFileSync(path.join(t.environmentPath, rel), "export const mine = 2;\n");
    writeFileSync(path.join(t.environmentPath, "free.txt"), "captured all the same\n");
    await b.ws.strandSession({ sessionId, reason: "test" });
    const { newSessionId } = await b.ws.resumeSession({ deadSessionId: sessionId, agentId: "agent-a" });
    expect(text((await b.ws.readFile({ sessionId: newSessionId, path: "free.txt" })).content)).toBe("captured all the same\n");
    const failed = await eventsOf(b, workspaceId, "turn.capture_failed");
    expect(failed).toHaveLength(1);
    expect(failed[0]!.reason).toBe("SYMBOL_LOCKED");
    const kept = readdirSync(path.join(b.envRoot, ".unsaved"));
    expect(kept.some((d) => d.startsWith(workspaceId))).toBe(true);
    expect(b.server.turns.captureFailures).toBeGreaterThanOrEqual(1);
    const metrics = await (await fetch(b.server.metricsUrl!)).text();
    expect(metrics).toMatch(/berth_turn_capture_failures_total [1-9]/);
  });

  /** Waits (bounded) until the turn's directory is gone and its row is finished (the turn.cancelled event stored after the teardown). */
  const settled = async (workspaceId: string, dir: string) => {
    for (let i = 0; i < 500 && (existsSync(dir) || (await eventsOf(b, workspaceId, "turn.cancelled")).length === 0); i++) await new Promise((r) => setTimeout(r, 10));
    expect(existsSync(dir)).toBe(false);
  };

  for (const how of ["AbandonSession", "DestroyWorkspace"] as const) {
    it(`${how} under a running turn: the turn is cancelled and its directory discarded with the overlay (asked for), nothing kept under .unsaved/ nor reported lost`, async () => {
      const { sessionId, workspaceId } = await newSession(b, source);
      const t = await b.turns.beginTurn({ sessionId });
      writeFileSync(path.join(t.environmentPath, "discarded.txt"), "the session is ended on purpose\n");
      if (how === "AbandonSession") await b.ws.abandonSession({ sessionId, reason: "test" });
      else await b.ws.destroyWorkspace({ sessionId });
      await settled(workspaceId, t.environmentPath);
      expect(readdirNames(path.join(b.envRoot, ".unsaved")).filter((n) => n.startsWith(workspaceId))).toEqual([]);
      expect(await eventsOf(b, workspaceId, "turn.capture_failed")).toEqual([]);
      const cancelled = await eventsOf(b, workspaceId, "turn.cancelled");
      expect(cancelled.map((e) => e.reason)).toEqual([how === "AbandonSession" ? "session.abandoned" : "session.destroyed"]);
      const rows = await sql<{ n: number }>`SELECT count(*)::int AS n FROM overlay_files WHERE workspace_id = ${workspaceId}::uuid`.execute(b.database.opened.db);
      expect(rows.rows[0]!.n).toBe(0);
    });
  }
});

needs({ postgres: true })("issue 14: across instances, the instance running the turn captures a strand answered by another", () => {
  let b: TurnBerth;
  let source: string;
  beforeAll(async () => {
    source = makeGitRepo(8);
    b = await startTurnBerth({ instances: 2 });
  });
  afterAll(async () => {
    await b?.close();
    rmSync(source, { recursive: true, force: true });
  });

  it("(a, two instances) the turn runs on one instance, the strand and the resume are answered by the other: ReadFile returns the edit", async () => {
    const [one, two] = b.servers;
    const ws1 = createGrpcClient(WorkspaceService, one!.grpcAddress);
    const turns1 = createGrpcClient(TurnService, one!.grpcAddress);
    const ws2 = createGrpcClient(WorkspaceService, two!.grpcAddress);
    try {
      const repo = await ws1.registerRepository({ name: `two-${process.pid}`, sourcePath: source });
      const created = (await ws1.createWorkspace({ repoId: repo.repository!.id, agentId: "agent-x", mode: WorkspaceMode.PERSISTENT })).workspace!;
      const t = await turns1.beginTurn({ sessionId: created.sessionId });
      expect(t.environmentPath.startsWith(b.envRoot + path.sep)).toBe(true); // on the first instance's disk
      writeFileSync(path.join(t.environmentPath, "across.txt"), "captured by the turn's own instance\n");
      await ws2.strandSession({ sessionId: created.sessionId, reason: "test" });
      const { newSessionId } = await ws2.resumeSession({ deadSessionId: created.sessionId, agentId: "agent-x" });
      expect(text((await ws2.readFile({ sessionId: newSessionId, path: "across.txt" })).content)).toBe("captured by the turn's own instance\n");
    } finally {
      ws1.close();
      turns1.close();
      ws2.close();
    }
  });
});

describe("issue 14: pinning off strands unfinished work", () => {
  let b: TurnBerth;
  const clock = new ManualClock(Date.now());
  beforeAll(async () => {
    b = await startTurnBerth({ clock, instances: 1, env: { BERTH_PIN_NONTERMINAL: "0", BERTH_IDLE_TTL_S: "60", BERTH_MAX_TTL_S: "600", BERTH_GC_INTERVAL_MS: "3600000" } });
  });
  afterAll(async () => {
    await b?.close();
  });

  it("(b) pin-off: an idle persistent workspace whose changeset is SUBMITTED is stranded (gc_idle), not destroyed; its overlay kept for the resume", async () => {
    const { sessionId, workspaceId } = await newSession(b, undefined);
    await b.ws.writeFile({ sessionId, path: "work.txt", content: utf8("unfinished work\n") });
    const ws = (await b.ws.getWorkspace({ sessionId })).workspace!;
    await b.ws.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.SUBMITTED });
    // A terminal one beside it is still evicted.
    const done = await newSession(b, undefined, "agent-done");
    const doneWs = (await b.ws.getWorkspace({ sessionId: done.sessionId })).workspace!;
    await b.ws.transitionChangeset({ changesetId: doneWs.changesetId, toState: ChangesetState.CLOSED });
    clock.advance(61_000);
    const report = await b.server.lifecycle.tick();
    expect(report.idle).toBe(2);
    const after = (await b.ws.getWorkspace({ sessionId })).workspace!;
    expect(after.lifecycleState).toBe(LifecycleState.STRANDED);
    expect(after.lifecycleReason).toBe("gc_idle");
    expect((await b.ws.getWorkspace({ sessionId: done.sessionId })).workspace!.lifecycleState).toBe(LifecycleState.DESTROYED);
    const rows = await sql<{ path: string }>`SELECT path FROM overlay_files WHERE workspace_id = ${workspaceId}::uuid`.execute(b.database.opened.db);
    expect(rows.rows.map((r) => r.path)).toEqual(["work.txt"]);
    const { newSessionId } = await b.ws.resumeSession({ deadSessionId: sessionId, agentId: "agent-a" });
    expect(text((await b.ws.readFile({ sessionId: newSessionId, path: "work.txt" })).content)).toBe("unfinished work\n");
  });

  it("GC max lifetime under a running turn, pinning off: stranded (gc_max_lifetime), the turn's edit in the overlay at resume", async () => {
    const source = makeGitRepo(4);
    try {
      const { sessionId } = await newSession(b, source);
      const t = await b.turns.beginTurn({ sessionId });
      writeFileSync(path.join(t.environmentPath, "long-turn.txt"), "a turn older than the max lifetime\n");
      clock.advance(601_000);
      await b.server.lifecycle.tick();
      const { newSessionId } = await b.ws.resumeSession({ deadSessionId: sessionId, agentId: "agent-a" });
      expect(text((await b.ws.readFile({ sessionId: newSessionId, path: "long-turn.txt" })).content)).toBe("a turn older than the max lifetime\n");
    } finally {
      rmSync(source, { recursive: true, force: true });
    }
  });

  it("GC expiry of a persistent workspace under a running turn: stranded (expired), the turn's edit in the overlay at resume", async () => {
    const source = makeGitRepo(4);
    try {
      const repo = await b.ws.registerRepository({ name: `expiry-${process.pid}`, sourcePath: source });
      const created = (await b.ws.createWorkspace({ repoId: repo.repository!.id, agentId: "agent-e", mode: WorkspaceMode.PERSISTENT, ttlSeconds: 30 })).workspace!;
      const t = await b.turns.beginTurn({ sessionId: created.sessionId });
      writeFileSync(path.join(t.environmentPath, "expiring.txt"), "written before the expiry\n");
      clock.advance(31_000);
      const report = await b.server.lifecycle.tick();
      expect(report.expired).toBe(1);
      const { newSessionId } = await b.ws.resumeSession({ deadSessionId: created.sessionId, agentId: "agent-e" });
      expect(text((await b.ws.readFile({ sessionId: newSessionId, path: "expiring.txt" })).content)).toBe("written before the expiry\n");
    } finally {
      rmSync(source, { recursive: true, force: true });
    }
  });
});

describe("issue 14: capture leaves out what it should not store, and says so", () => {
  let b: TurnBerth;
  let source: string;
  beforeAll(async () => {
    source = makeGitRepo(6);
    writeFileSync(path.join(source, ".gitignore"), "node_modules/\n*.log\n");
    mkdirSync(path.join(source, "vendor"));
    writeFileSync(path.join(source, "vendor", "tracked.log"), "tracked although ignored\n");
    execFileSync("git", ["-C", source, "add", "-A", "-f"], { stdio: "pipe" });
    execFileSync("git", ["-C", source, "commit", "-q", "-m", "gitignore"], { stdio: "pipe" });
    b = await startTurnBerth({ env: { BERTH_MAX_FILE_BYTES: "4096" } });
  });
  afterAll(async () => {
    await b?.close();
    rmSync(source, { recursive: true, force: true });
  });

  it("(d) capture skips .gitignored files (node_modules/), capture_exclude paths and oversize files, reporting each in EndTurn's left_out", async () => {
    const repo = await b.ws.registerRepository({ name: `ignore-${process.pid}`, sourcePath: source, captureExclude: ["build/", "*.tmp"] });
    expect(repo.repository!.captureExclude).toEqual(["build/", "*.tmp"]);
    const created = (await b.ws.createWorkspace({ repoId: repo.repository!.id, agentId: "agent-i", mode: WorkspaceMode.PERSISTENT })).workspace!;
    const sessionId = created.sessionId;
    const t = await b.turns.beginTurn({ sessionId });
    const env = t.environmentPath;
    // An `npm install`: many files under an ignored directory.
    for (let i = 0; i < 50; i++) {
      mkdirSync(path.join(env, "node_modules", `pkg${i}`), { recursive: true });
      writeFileSync(path.join(env, "node_modules", `pkg${i}`, "index.js"), `module.exports = ${i};\n`);
    }
    writeFileSync(path.join(env, "debug.log"), "ignored by *.log\n");
    writeFileSync(path.join(env, "vendor", "tracked.log"), "a tracked file is captured whatever .gitignore says\n");
    mkdirSync(path.join(env, "build"));
    writeFileSync(path.join(env, "build", "out.js"), "excluded by the repository\n");
    writeFileSync(path.join(env, "scratch.tmp"), "excluded by the repository\n");
    writeFileSync(path.join(env, "big.bin"), Buffer.alloc(5000, 1));
    writeFileSync(path.join(env, "kept.txt"), "captured\n");
    const ended = await b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED });
    expect([...ended.capturedPaths].sort()).toEqual(["kept.txt", "vendor/tracked.log"]);
    const leftOut = Object.fromEntries(ended.leftOut.map((l) => [l.path, l.reason]));
    expect(leftOut).toEqual({
      "node_modules/": "gitignored",
      "debug.log": "gitignored",
      "build/": "excluded",
      "scratch.tmp": "excluded",
      "big.bin": "too_large",
    });
    const rows = await sql<{ path: string }>`SELECT path FROM overlay_files WHERE workspace_id = ${created.workspaceId}::uuid ORDER BY path`.execute(b.database.opened.db);
    expect(rows.rows.map((r) => r.path)).toEqual(["kept.txt", "vendor/tracked.log"]);
    // Left out is not deleted: the base's tracked files under ignore rules are intact, nothing inferred as a deletion.
    expect((await b.ws.readFile({ sessionId, path: "README.md" })).content.length).toBeGreaterThan(0);
  });

  it("rejects a capture_exclude pattern that is empty or too long, naming the field", async () => {
    const f = await failure(b.ws.registerRepository({ name: `bad-exclude-${process.pid}`, captureExclude: ["ok/", "", "x".repeat(201)] }));
    expect(f.code).toBe("INVALID_ARGUMENT");
    expect(f.fields).toEqual(["capture_exclude[1]", "capture_exclude[2]"]);
  });
});

needs({ postgres: true })("issue 14: a capture slower than the resuming call's deadline", () => {
  let b: TurnBerth;
  let source: string;
  beforeAll(async () => {
    source = makeGitRepo(4);
    b = await startTurnBerth();
  });
  afterAll(async () => {
    await b?.close();
    rmSync(source, { recursive: true, force: true });
  });

  it("ResumeSession answers UNAVAILABLE CAPTURE_PENDING before the caller's deadline and changes nothing; a retry after the capture resumes with the edit", async () => {
    const { sessionId, workspaceId } = await newSession(b, source);
    const t = await b.turns.beginTurn({ sessionId });
    writeFileSync(path.join(t.environmentPath, "slow.txt"), "written by the running turn\n");
    // The capture's insert of slow.txt waits behind this uncommitted row of the same key: the
    // capture is slow for as long as the test holds it (a loaded machine, made on purpose).
    let releaseBlocker!: () => void;
    const held = new Promise<void>((r) => (releaseBlocker = r));
    let blocking!: () => void;
    const blockerIn = new Promise<void>((r) => (blocking = r));
    const blocker = b.database.opened.db.transaction().execute(async (trx) => {
      await sql`INSERT INTO overlay_files (workspace_id, path, repo_id, content, sha256, change, base_hash, updated_at)
        SELECT id, 'slow.txt', repo_id, 'x'::bytea, 'x', 'added', NULL, now() FROM workspaces WHERE id = ${workspaceId}::uuid`.execute(trx);
      blocking();
      await held;
      throw new Error("rolled back on purpose");
    }).catch((err: unknown) => {
      if (!(err instanceof Error && err.message === "rolled back on purpose")) throw err;
    });
    try {
      await blockerIn;
      await b.ws.strandSession({ sessionId, reason: "test" });
      const sent = Date.now();
      const f = await failure(b.ws.resumeSession({ deadSessionId: sessionId, agentId: "agent-a" }, { deadlineMs: 3000 }));
      expect(`${f.code} ${f.reason}`).toBe("UNAVAILABLE CAPTURE_PENDING");
      expect(f.metadata.turn_id).toBe(t.turnId);
      expect(Date.now() - sent).toBeLessThan(3000);
      // Nothing changed: still stranded under its old id, no redirect.
      expect((await b.ws.getWorkspace({ sessionId })).workspace!.lifecycleState).toBe(LifecycleState.STRANDED);
      const redirects = await sql<{ n: string }>`SELECT count(*) AS n FROM session_redirects WHERE dead_session_id = ${sessionId}::uuid`.execute(b.database.opened.db);
      expect(Number(redirects.rows[0]!.n)).toBe(0);
    } finally {
      releaseBlocker();
      await blocker;
    }
    const { newSessionId } = await b.ws.resumeSession({ deadSessionId: sessionId, agentId: "agent-a" });
    expect(text((await b.ws.readFile({ sessionId: newSessionId, path: "slow.txt" })).content)).toBe("written by the running turn\n");
  });
});
