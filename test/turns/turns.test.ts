import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MapStatus, OnBusy, TurnState } from "../../gen/berth/v1/turn_service_pb.js";
import { TurnOutcome } from "../../gen/berth/v1/types_pb.js";
import { BerthError } from "../../src/platform/errors.js";
import { ManualClock } from "../../src/platform/clock.js";
import { failure } from "../support/rpc-error.js";
import { makeGitRepo, newSession, startTurnBerth, type TurnBerth } from "./helpers.js";

const MARKER = ".berth-env";

describe("TurnService: the steered session keeps its environment", () => {
  let b: TurnBerth;
  let source: string;
  const clock = new ManualClock(Date.now());

  beforeAll(async () => {
    source = makeGitRepo(30);
    b = await startTurnBerth({ clock });
  });
  afterAll(async () => {
    await b?.close();
    rmSync(source, { recursive: true, force: true });
  });

  it("runs the production sequence: a long turn, a steer, an end, and the third turn finds its environment alive", async () => {
    const { sessionId } = await newSession(b, source);
    const before = await b.turns.getPoolStats({});

    // The directory is never deleted under a running turn: a poll checks it throughout.
    let running: { path: string } | undefined;
    const violations: string[] = [];
    const poll = setInterval(() => {
      if (running && !existsSync(path.join(running.path, MARKER))) violations.push(`missing during a running turn: ${running.path}`);
    }, 1);

    const t1 = await b.turns.beginTurn({ sessionId });
    expect(t1.warm).toBe(false);
    running = { path: t1.environmentPath };
    expect(existsSync(path.join(t1.environmentPath, "README.md"))).toBe(true);
    await new Promise((r) => setTimeout(r, 20)); // the long turn

    running = undefined;
    const t2 = await b.turns.beginTurn({ sessionId, onBusy: OnBusy.SUPERSEDE });
    running = { path: t2.environmentPath };
    expect(t2.supersededTurnId).toBe(t1.turnId);
    expect((await b.turns.turnHeartbeat({ turnId: t1.turnId })).current).toBe(false);
    expect((await b.turns.turnHeartbeat({ turnId: t2.turnId })).current).toBe(true);
    await new Promise((r) => setTimeout(r, 10));
    running = undefined;
    await b.turns.endTurn({ turnId: t2.turnId, outcome: TurnOutcome.COMPLETED });

    const t3 = await b.turns.beginTurn({ sessionId });
    running = { path: t3.environmentPath };
    expect(t3.warm).toBe(true);
    writeFileSync(path.join(t3.environmentPath, "third.txt"), "works\n");
    running = undefined;
    const ended = await b.turns.endTurn({ turnId: t3.turnId, outcome: TurnOutcome.COMPLETED });
    clearInterval(poll);

    expect(ended.capturedPaths).toEqual(["third.txt"]);
    expect(violations).toEqual([]);
    const after = await b.turns.getPoolStats({});
    expect(after.coldAcquires - before.coldAcquires).toBe(2n); // t1, and exactly one for the supersede
    expect(after.warmAcquires - before.warmAcquires).toBe(1n);
    expect((after.evictions["supersede-busy"] ?? 0n) - (before.evictions["supersede-busy"] ?? 0n)).toBe(1n);

    const list = await b.turns.listTurns({ sessionId });
    expect(list.turns.map((t) => [t.turnId, t.state])).toEqual([
      [t3.turnId, TurnState.ENDED],
      [t2.turnId, TurnState.ENDED],
      [t1.turnId, TurnState.SUPERSEDED],
    ]);
  });

  it("does exactly one cold acquire per supersede, however many steers", async () => {
    const { sessionId } = await newSession(b, source);
    const before = await b.turns.getPoolStats({});
    let last = await b.turns.beginTurn({ sessionId });
    for (let i = 0; i < 3; i++) {
      const next = await b.turns.beginTurn({ sessionId });
      expect(next.supersededTurnId).toBe(last.turnId);
      expect(existsSync(path.join(next.environmentPath, MARKER))).toBe(true);
      last = next;
    }
    const after = await b.turns.getPoolStats({});
    expect(after.coldAcquires - before.coldAcquires).toBe(4n);
    await b.turns.endTurn({ turnId: last.turnId, outcome: TurnOutcome.COMPLETED });
  });

  it("answers REJECT with TURN_IN_PROGRESS and leaves the running turn untouched", async () => {
    const { sessionId } = await newSession(b, source);
    const t1 = await b.turns.beginTurn({ sessionId });
    writeFileSync(path.join(t1.environmentPath, "work.txt"), "in progress\n");
    const f = await failure(b.turns.beginTurn({ sessionId, onBusy: OnBusy.REJECT }));
    expect(f.code).toBe("FAILED_PRECONDITION");
    expect(f.reason).toBe("TURN_IN_PROGRESS");
    expect(f.metadata.turn_id).toBe(t1.turnId);
    expect((await b.turns.turnHeartbeat({ turnId: t1.turnId })).current).toBe(true);
    expect(readFileSync(path.join(t1.environmentPath, "work.txt"), "utf8")).toBe("in progress\n");
    await b.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.COMPLETED });
  });

  it("returns the same turn to a retried BeginTurn with the same client_turn_id instead of superseding itself", async () => {
    const { sessionId } = await newSession(b, source);
    const [a, c] = await Promise.all([
      b.turns.beginTurn({ sessionId, clientTurnId: "msg-1" }),
      b.turns.beginTurn({ sessionId, clientTurnId: "msg-1" }),
    ]);
    expect(c.turnId).toBe(a.turnId);
    const again = await b.turns.beginTurn({ sessionId, clientTurnId: "msg-1" });
    expect(again.turnId).toBe(a.turnId);
    expect(again.supersededTurnId).toBe("");
    expect((await b.turns.turnHeartbeat({ turnId: a.turnId })).current).toBe(true);
    await b.turns.endTurn({ turnId: a.turnId, outcome: TurnOutcome.COMPLETED });
  });

  it("keeps an approval-parked environment past the idle TTL and resumes it warm", async () => {
    const { sessionId } = await newSession(b, source);
    const t1 = await b.turns.beginTurn({ sessionId });
    await b.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.AWAITING_APPROVAL });
    expect((await b.turns.getPoolStats({})).awaitingApproval).toBeGreaterThanOrEqual(1);
    clock.advance(5 * 60_000); // past the idle TTL (60 s), within the approval TTL (10 min)
    for (const s of b.servers) await s.turns.sweep(); // the environment lives on the instance that built it
    const t2 = await b.turns.beginTurn({ sessionId });
    expect(t2.warm).toBe(true);
    await b.turns.endTurn({ turnId: t2.turnId, outcome: TurnOutcome.COMPLETED });
  });

  it("evicts an idle environment past its TTL (idle-expiry) and rebuilds it cold", async () => {
    const { sessionId } = await newSession(b, source);
    const t1 = await b.turns.beginTurn({ sessionId });
    await b.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.COMPLETED });
    const before = await b.turns.getPoolStats({});
    clock.advance(61_000);
    for (const s of b.servers) await s.turns.sweep(); // the environment lives on the instance that built it
    expect(existsSync(t1.environmentPath)).toBe(false);
    const after = await b.turns.getPoolStats({});
    // (other sessions' idle environments of this file expire in the same sweep)
    expect((after.evictions["idle-expiry"] ?? 0n) - (before.evictions["idle-expiry"] ?? 0n)).toBeGreaterThanOrEqual(1n);
    const t2 = await b.turns.beginTurn({ sessionId });
    expect(t2.warm).toBe(false);
    await b.turns.endTurn({ turnId: t2.turnId, outcome: TurnOutcome.COMPLETED });
  });

  it("rebuilds an approval-parked environment whose directory was removed (mount-lost)", async () => {
    const { sessionId } = await newSession(b, source);
    const t1 = await b.turns.beginTurn({ sessionId });
    await b.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.AWAITING_APPROVAL });
    rmSync(t1.environmentPath, { recursive: true, force: true });
    const before = await b.turns.getPoolStats({});
    const t2 = await b.turns.beginTurn({ sessionId });
    expect(t2.warm).toBe(false);
    expect(existsSync(path.join(t2.environmentPath, "README.md"))).toBe(true);
    const after = await b.turns.getPoolStats({});
    expect((after.evictions["mount-lost"] ?? 0n) - (before.evictions["mount-lost"] ?? 0n)).toBe(1n);
    await b.turns.endTurn({ turnId: t2.turnId, outcome: TurnOutcome.COMPLETED });
    // and the rebuilt one works on the next turn
    const t3 = await b.turns.beginTurn({ sessionId });
    expect(t3.warm).toBe(true);
    await b.turns.endTurn({ turnId: t3.turnId, outcome: TurnOutcome.COMPLETED });
  });

  it("reuses the environment when the liveness probe throws (fails open) and logs it", async () => {
    const { sessionId } = await newSession(b, source);
    const t1 = await b.turns.beginTurn({ sessionId });
    await b.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.AWAITING_APPROVAL });
    // The marker replaced by a directory: reading it throws EISDIR — neither alive nor dead.
    unlinkSync(path.join(t1.environmentPath, MARKER));
    mkdirSync(path.join(t1.environmentPath, MARKER));
    const t2 = await b.turns.beginTurn({ sessionId });
    expect(t2.warm).toBe(true);
    expect(b.logs.some((l) => String(l.msg).includes("mount-probe threw, reusing"))).toBe(true);
    await b.turns.cancelTurn({ turnId: t2.turnId });
  });

  it("captures files added, changed and deleted in the directory into the overlay at EndTurn (ReadFile returns them)", async () => {
    const { sessionId } = await newSession(b, source);
    const t1 = await b.turns.beginTurn({ sessionId });
    const dir = t1.environmentPath;
    writeFileSync(path.join(dir, "added.txt"), "new file\n");
    mkdirSync(path.join(dir, "deep", "er"), { recursive: true });
    writeFileSync(path.join(dir, "deep", "er", "nested.ts"), "export {};\n");
    writeFileSync(path.join(dir, "README.md"), "# changed\n");
    unlinkSync(path.join(dir, "pkg0", "mod0", "file0.ts"));
    const ended = await b.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.COMPLETED });
    expect([...ended.capturedPaths].sort()).toEqual(["README.md", "added.txt", "deep/er/nested.ts", "pkg0/mod0/file0.ts"]);
    expect(ended.turn!.state).toBe(TurnState.ENDED);

    const text = async (p: string) => Buffer.from((await b.ws.readFile({ sessionId, path: p })).content).toString();
    expect(await text("added.txt")).toBe("new file\n");
    expect(await text("deep/er/nested.ts")).toBe("export {};\n");
    expect(await text("README.md")).toBe("# changed\n");
    expect((await failure(b.ws.readFile({ sessionId, path: "pkg0/mod0/file0.ts" }))).code).toBe("NOT_FOUND");
    expect(await text("pkg1/mod1/file1.ts")).toBe("export const v1 = 1;\n");
  });

  it("captures the displaced turn's edits before a supersede tears its directory down, and materialises them for the new turn", async () => {
    const { sessionId } = await newSession(b, source);
    const t1 = await b.turns.beginTurn({ sessionId });
    writeFileSync(path.join(t1.environmentPath, "steer.txt"), "written before the steer\n");
    unlinkSync(path.join(t1.environmentPath, "README.md"));
    const t2 = await b.turns.beginTurn({ sessionId });
    expect(t2.warm).toBe(false);
    expect(readFileSync(path.join(t2.environmentPath, "steer.txt"), "utf8")).toBe("written before the steer\n");
    expect(existsSync(path.join(t2.environmentPath, "README.md"))).toBe(false);
    expect(Buffer.from((await b.ws.readFile({ sessionId, path: "steer.txt" })).content).toString()).toBe("written before the steer\n");
    const ended = await b.turns.endTurn({ turnId: t2.turnId, outcome: TurnOutcome.COMPLETED });
    expect(ended.capturedPaths).toEqual([]); // materialised from the overlay: nothing new
  });

  it("refuses BeginTurn on a stranded session with SESSION_STRANDED and captures then tears down its environment", async () => {
    const { sessionId, workspaceId } = await newSession(b, source);
    const t1 = await b.turns.beginTurn({ sessionId });
    writeFileSync(path.join(t1.environmentPath, "late.txt"), "before the strand\n");
    await b.ws.strandSession({ sessionId, reason: "test" });
    const f = await failure(b.turns.beginTurn({ sessionId }));
    expect(f.code).toBe("FAILED_PRECONDITION");
    expect(f.reason).toBe("SESSION_STRANDED");
    for (let i = 0; i < 200 && (await b.turns.turnHeartbeat({ turnId: t1.turnId })).current; i++) await new Promise((r) => setTimeout(r, 10));
    expect((await b.turns.turnHeartbeat({ turnId: t1.turnId })).current).toBe(false);
    // The resume waits for the capture of the stranded session's running turn: then the file is in the overlay.
    const { newSessionId } = await b.ws.resumeSession({ deadSessionId: sessionId, agentId: "agent-a" });
    expect(existsSync(t1.environmentPath)).toBe(false);
    expect(new TextDecoder().decode((await b.ws.readFile({ sessionId: newSessionId, path: "late.txt" })).content)).toBe("before the strand\n");
    expect(readdirNames(path.join(b.envRoot, ".unsaved")).filter((n) => n.startsWith(workspaceId))).toEqual([]);
    const stats = await b.turns.getPoolStats({});
    expect(stats.evictions["session-ended"] ?? 0n).toBeGreaterThanOrEqual(1n);
  });

  it("cancels a turn at once: its heartbeat answers not current and its teardown settles", async () => {
    const { sessionId } = await newSession(b, source);
    const t1 = await b.turns.beginTurn({ sessionId });
    const r = await b.turns.cancelTurn({ turnId: t1.turnId });
    expect(r.cancelled).toBe(true);
    expect((await b.turns.turnHeartbeat({ turnId: t1.turnId })).current).toBe(false);
    // The teardown (capture, rename, its rows) settles in the background: a repeated CancelTurn
    // says when; once it does, the directory is gone.
    let again = await b.turns.cancelTurn({ turnId: t1.turnId });
    for (let i = 0; i < 500 && !again.settled; i++) {
      await new Promise((res) => setTimeout(res, 10));
      again = await b.turns.cancelTurn({ turnId: t1.turnId });
    }
    expect(again).toMatchObject({ cancelled: false, settled: true });
    expect(existsSync(t1.environmentPath)).toBe(false);
    expect((await failure(b.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.COMPLETED }))).reason).toBe("TURN_NOT_RUNNING");
  });

  it("GetWorkspaceMap with no environment yet maps the base with the overlay applied", async () => {
    const { sessionId } = await newSession(b, source);
    await b.ws.writeFile({ sessionId, path: "docs/new.md", content: new TextEncoder().encode("# new\n") });
    await b.ws.deleteFile({ sessionId, path: "README.md" });
    const m = await b.turns.getWorkspaceMap({ sessionId });
    expect(m.workspaceMap!.status).toBe(MapStatus.OK);
    const paths = m.workspaceMap!.entries.map((e) => e.path);
    expect(paths).toContain("docs/new.md");
    expect(paths).toContain("docs");
    expect(paths).not.toContain("README.md");
    expect(paths.some((p) => p.startsWith("pkg0"))).toBe(true);
    expect(m.workspaceMap!.text).toContain("new.md");
    // No environment was made for it: the map did not start one.
    expect((await b.turns.listTurns({ sessionId })).turns).toHaveLength(0);
  });

  it("gives BeginTurn and GetWorkspaceMap the environment's workspace map", async () => {
    const { sessionId } = await newSession(b, source);
    const t1 = await b.turns.beginTurn({ sessionId });
    expect([MapStatus.OK, MapStatus.STALE]).toContain(t1.workspaceMap!.status);
    expect(t1.workspaceMap!.entries.map((e) => e.path)).toContain("README.md");
    expect(t1.workspaceMap!.entries.map((e) => e.path)).not.toContain(MARKER);
    const m = await b.turns.getWorkspaceMap({ sessionId });
    expect(m.workspaceMap!.text).toContain("README.md");
    await b.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.COMPLETED });
  });

  it("streams turn and env.evicted events on WatchTurns, and stores them", async () => {
    const { sessionId } = await newSession(b, source);
    const ac = new AbortController();
    const kinds: string[] = [];
    const stream = (async () => {
      try {
        for await (const m of b.turns.watchTurns({ sessionId }, { signal: ac.signal })) {
          kinds.push(m.event!.kind);
          if (kinds.includes("turn.parked")) break;
        }
      } catch {
        /* cancelled */
      }
    })();
    await new Promise((r) => setTimeout(r, 100));
    const t1 = await b.turns.beginTurn({ sessionId });
    const t2 = await b.turns.beginTurn({ sessionId });
    await b.turns.endTurn({ turnId: t2.turnId, outcome: TurnOutcome.COMPLETED });
    await Promise.race([stream, new Promise((r) => setTimeout(r, 3000))]);
    ac.abort();
    expect(kinds).toEqual(expect.arrayContaining(["turn.started", "env.evicted", "turn.superseded", "turn.ended", "turn.parked"]));
    const stored = await b.server.database.db.selectFrom("events").select("kind").where("session_id", "=", sessionId).execute();
    expect(stored.map((s) => s.kind)).toEqual(expect.arrayContaining(["turn.started", "turn.superseded", "env.evicted", "turn.ended", "turn.parked"]));
    expect(t1.turnId).not.toBe(t2.turnId);
  });

  it("gives a workspace whose repository has no source_path an environment of the overlay alone", async () => {
    const { sessionId } = await newSession(b, undefined);
    await b.ws.writeFile({ sessionId, path: "only.txt", content: Buffer.from("overlay\n") });
    const t1 = await b.turns.beginTurn({ sessionId });
    expect(readFileSync(path.join(t1.environmentPath, "only.txt"), "utf8")).toBe("overlay\n");
    await b.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.FAILED });
    expect(existsSync(t1.environmentPath)).toBe(false);
  });
});

describe("TurnService: a capture that fails", () => {
  let b: TurnBerth;
  let source: string;
  const locked = new Set<string>();

  beforeAll(async () => {
    source = makeGitRepo(5);
    b = await startTurnBerth({
      wrapOverlay: (real) => ({
        ...real,
        entries: (w) => real.entries(w),
        readBase: (w, p) => real.readBase(w, p),
        usage: (w) => real.usage(w),
        deleteFile: (i) => real.deleteFile(i),
        writeFile: async (i) => {
          if (locked.has(i.path)) throw new BerthError("failed_precondition", "SYMBOL_LOCKED", `${i.path} is claimed by another session`);
          return real.writeFile(i);
        },
      }),
    });
  });
  afterAll(async () => {
    await b?.close();
    rmSync(source, { recursive: true, force: true });
  });

  it("fails EndTurn with CAPTURE_INCOMPLETE naming the paths, keeps the turn running and its directory, and succeeds once resolved", async () => {
    const { sessionId } = await newSession(b, source);
    const t1 = await b.turns.beginTurn({ sessionId });
    writeFileSync(path.join(t1.environmentPath, "locked.txt"), "mine\n");
    writeFileSync(path.join(t1.environmentPath, "free.txt"), "free\n");
    locked.add("locked.txt");
    const f = await failure(b.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.COMPLETED }));
    expect(f.code).toBe("FAILED_PRECONDITION");
    expect(f.reason).toBe("CAPTURE_INCOMPLETE");
    expect(f.metadata.paths).toBe("locked.txt");
    expect(f.metadata.reason).toBe("SYMBOL_LOCKED");
    expect((await b.turns.turnHeartbeat({ turnId: t1.turnId })).current).toBe(true);
    expect(readFileSync(path.join(t1.environmentPath, "locked.txt"), "utf8")).toBe("mine\n");

    locked.clear();
    const ended = await b.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.COMPLETED });
    expect(ended.capturedPaths).toEqual(["locked.txt"]);
    expect(Buffer.from((await b.ws.readFile({ sessionId, path: "locked.txt" })).content).toString()).toBe("mine\n");
  });

  it("keeps a superseded environment whose changes cannot be captured under .unsaved instead of deleting it", async () => {
    const { sessionId, workspaceId } = await newSession(b, source);
    const t1 = await b.turns.beginTurn({ sessionId });
    writeFileSync(path.join(t1.environmentPath, "stuck.txt"), "unsaved\n");
    locked.add("stuck.txt");
    const t2 = await b.turns.beginTurn({ sessionId });
    locked.clear();
    expect(t2.supersededTurnId).toBe(t1.turnId);
    const unsaved = path.join(path.dirname(t1.environmentPath), ".unsaved"); // the env root of the instance that held it
    const kept = readdirNames(unsaved).filter((n) => n.startsWith(workspaceId));
    expect(kept).toHaveLength(1);
    expect(readFileSync(path.join(unsaved, kept[0]!, "stuck.txt"), "utf8")).toBe("unsaved\n");
    await b.turns.endTurn({ turnId: t2.turnId, outcome: TurnOutcome.COMPLETED });
  });
});

describe("TurnService: pool capacity", () => {
  let b: TurnBerth;
  let source: string;

  beforeAll(async () => {
    source = makeGitRepo(5);
    // One process's pool bound, by design (with several instances each has its own; GetPoolStats sums them).
    b = await startTurnBerth({ env: { BERTH_ENV_POOL_MAX: "2" }, instances: 1 });
  });
  afterAll(async () => {
    await b?.close();
    rmSync(source, { recursive: true, force: true });
  });

  it("runs a new turn unreserved when the pool is full of BUSY environments, and evicts only IDLE ones by LRU", async () => {
    const s1 = await newSession(b, source);
    const s2 = await newSession(b, source);
    const s3 = await newSession(b, source);
    const t1 = await b.turns.beginTurn({ sessionId: s1.sessionId });
    const t2 = await b.turns.beginTurn({ sessionId: s2.sessionId });
    const t3 = await b.turns.beginTurn({ sessionId: s3.sessionId });
    expect(existsSync(path.join(t3.environmentPath, "README.md"))).toBe(true);
    let stats = await b.turns.getPoolStats({});
    expect(stats).toMatchObject({ busy: 2, capacity: 2, unreservedTurns: 1n });

    // t3 ran unreserved: at its end there is no seat, so it is torn down (captured first).
    await b.turns.endTurn({ turnId: t3.turnId, outcome: TurnOutcome.COMPLETED });
    expect(existsSync(t3.environmentPath)).toBe(false);

    await b.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.COMPLETED }); // idle
    await b.turns.endTurn({ turnId: t2.turnId, outcome: TurnOutcome.AWAITING_APPROVAL }); // approval
    const t3b = await b.turns.beginTurn({ sessionId: s3.sessionId });
    for (let i = 0; i < 100 && existsSync(t1.environmentPath); i++) await new Promise((r) => setTimeout(r, 10));
    expect(existsSync(t1.environmentPath)).toBe(false); // the idle one went
    expect(existsSync(path.join(t2.environmentPath, MARKER))).toBe(true); // the approval-parked one stayed
    stats = await b.turns.getPoolStats({});
    // one for t3's unreserved environment at its end, one for the LRU idle eviction
    expect(stats.evictions["capacity"]).toBe(2n);
    expect(stats).toMatchObject({ busy: 1, awaitingApproval: 1, idle: 0 });
    await b.turns.endTurn({ turnId: t3b.turnId, outcome: TurnOutcome.COMPLETED });
  });
});

function readdirNames(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

describe("TurnService: per-workspace states are bounded", () => {
  let b: TurnBerth;
  let source: string;

  beforeAll(async () => {
    source = makeGitRepo(3);
    b = await startTurnBerth();
  });
  afterAll(async () => {
    await b?.close();
    rmSync(source, { recursive: true, force: true });
  });

  /** Waits until the scheduler holds `n` per-workspace states (lane jobs settle after the answer). */
  async function statesBecome(n: number): Promise<number> {
    for (let i = 0; i < 200 && b.server.turns.workspaceStates !== n; i++) await new Promise((r) => setTimeout(r, 10));
    return b.server.turns.workspaceStates;
  }

  it("a workspace with no environment and no turn leaves no state behind (failed, cancelled, parked then ended)", async () => {
    expect(b.server.turns.workspaceStates).toBe(0);
    const failed = await newSession(b, source);
    const t1 = await b.turns.beginTurn({ sessionId: failed.sessionId });
    expect(b.server.turns.workspaceStates).toBe(1);
    await b.turns.endTurn({ turnId: t1.turnId, outcome: TurnOutcome.FAILED }); // torn down, unseated
    expect(await statesBecome(0)).toBe(0);

    const cancelled = await newSession(b, source);
    const t2 = await b.turns.beginTurn({ sessionId: cancelled.sessionId });
    await b.turns.cancelTurn({ turnId: t2.turnId });
    expect(await statesBecome(0)).toBe(0);

    const parked = await newSession(b, source);
    const t3 = await b.turns.beginTurn({ sessionId: parked.sessionId });
    await b.turns.endTurn({ turnId: t3.turnId, outcome: TurnOutcome.COMPLETED });
    expect(await statesBecome(1)).toBe(1); // its environment is parked, warm for the next turn
    const t4 = await b.turns.beginTurn({ sessionId: parked.sessionId });
    expect(t4.warm).toBe(true);
    await b.turns.endTurn({ turnId: t4.turnId, outcome: TurnOutcome.COMPLETED });
    await b.ws.destroyWorkspace({ sessionId: parked.sessionId }); // the parked environment is evicted
    expect(await statesBecome(0)).toBe(0);
  });
});
