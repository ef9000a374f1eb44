/**
 * Issue 14 with real `berth serve` processes: a running turn's edits survive kill -9 (the
 * restart captures the turn's directory, which outlives the process) and SIGTERM (the graceful
 * stop captures every running turn before the process exits). Real PostgreSQL, real git.
 */
import { mkdtempSync, readdirSync, rmSync, unlinkSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { TurnService } from "../../gen/berth/v1/turn_service_pb.js";
import { TurnOutcome, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { failure } from "../support/rpc-error.js";
import { serve, type Served } from "../support/serve-process.js";
import { needs } from "../support/services.js";
import { makeGitRepo } from "./helpers.js";

const text = (b: Uint8Array) => new TextDecoder().decode(b);

needs({ postgres: true })("issue 14: a running turn's edits survive the end of the process", () => {
  let database: TestDatabase;
  let source: string;
  let envRoot: string;
  const started: Served[] = [];
  beforeAll(async () => {
    database = await createTestDatabase("postgres");
    source = makeGitRepo(6);
  });
  afterAll(async () => {
    for (const s of started) if (s.child.exitCode === null) s.child.kill("SIGKILL");
    await database?.drop();
    rmSync(source, { recursive: true, force: true });
  });

  const start = async (name: string, root: string) => {
    const s = await serve({ DATABASE_URL: database.url!, BERTH_INSTANCE_NAME: name, BERTH_ENV_ROOT: root, BERTH_ENV_SPARES: "0" });
    started.push(s);
    return { s, ws: createGrpcClient(WorkspaceService, s.grpc), turns: createGrpcClient(TurnService, s.grpc) };
  };

  /** Closes a started server's clients, signals its process and waits for it to exit. */
  const halt = async (c: Awaited<ReturnType<typeof start>>, signal: NodeJS.Signals) => {
    c.ws.close();
    c.turns.close();
    c.s.child.kill(signal);
    await c.s.exited;
  };

  /** A persistent workspace with a RUNNING turn that has written two files into its directory. */
  const runningTurnWithEdits = async (c: Awaited<ReturnType<typeof start>>, label: string) => {
    const repo = await c.ws.registerRepository({ name: `proc-${label}-${process.pid}`, sourcePath: source });
    const created = (await c.ws.createWorkspace({ repoId: repo.repository!.id, agentId: `agent-${label}`, mode: WorkspaceMode.PERSISTENT })).workspace!;
    const t = await c.turns.beginTurn({ sessionId: created.sessionId });
    writeFileSync(path.join(t.environmentPath, `${label}.txt`), `written before the ${label}\n`);
    writeFileSync(path.join(t.environmentPath, "README.md"), `# changed before the ${label}\n`);
    return { sessionId: created.sessionId, workspaceId: created.workspaceId, agentId: `agent-${label}`, turn: t };
  };

  it("kill -9 during a running turn, restart of the same instance (same name, same env root), resume: the turn's edits are in the overlay", async () => {
    envRoot = mkdtempSync(path.join(tmpdir(), "berth-lostwork-kill-"));
    const first = await start("lostwork-killed", envRoot);
    const w = await runningTurnWithEdits(first, "kill");
    await halt(first, "SIGKILL");
    expect(existsSync(w.turn.environmentPath)).toBe(true); // the directory outlives the process

    const second = await start("lostwork-killed", envRoot);
    try {
      expect((await failure(second.ws.readFile({ sessionId: w.sessionId, path: "kill.txt" }))).reason).toBe("SESSION_STRANDED");
      const { newSessionId } = await second.ws.resumeSession({ deadSessionId: w.sessionId, agentId: w.agentId });
      expect(text((await second.ws.readFile({ sessionId: newSessionId, path: "kill.txt" })).content)).toBe("written before the kill\n");
      expect(text((await second.ws.readFile({ sessionId: newSessionId, path: "README.md" })).content)).toBe("# changed before the kill\n");
      expect(existsSync(w.turn.environmentPath)).toBe(false); // captured, then torn down
      expect(second.s.lines.some((l) => l.msg === "turns: captured what a previous process left in an environment" && l.workspaceId === w.workspaceId)).toBe(true);
    } finally {
      await halt(second, "SIGTERM");
    }
  });

  it("kill -9 where the directory cannot be captured (its saved manifest lost): the restart reports it (turn.capture_failed NO_MANIFEST) and keeps the directory", async () => {
    const root = mkdtempSync(path.join(tmpdir(), "berth-lostwork-nomanifest-"));
    const first = await start("lostwork-nomanifest", root);
    const w = await runningTurnWithEdits(first, "lost");
    await halt(first, "SIGKILL");
    unlinkSync(path.join(root, ".manifests", `${w.workspaceId}.json`));

    const second = await start("lostwork-nomanifest", root);
    try {
      const r = await sql<{ reason: string }>`SELECT reason FROM events WHERE workspace_id = ${w.workspaceId}::uuid AND kind = 'turn.capture_failed'`.execute(database.opened.db);
      expect(r.rows.map((x) => x.reason)).toEqual(["NO_MANIFEST"]);
      const kept = readdirSync(path.join(root, ".orphaned")).filter((d) => d.startsWith(w.workspaceId));
      expect(kept).toHaveLength(1);
      expect(existsSync(path.join(root, ".orphaned", kept[0]!, "lost.txt"))).toBe(true);
      const metricsUrl = second.s.lines.find((l) => l.msg === "metrics listening")?.metrics;
      expect(typeof metricsUrl).toBe("string");
      expect(await (await fetch(String(metricsUrl))).text()).toMatch(/berth_turn_capture_failures_total 1/);
    } finally {
      await halt(second, "SIGTERM");
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("kill -9, the session abandoned by another instance before the restart: the restart keeps the directory under .unsaved/ and reports it (turn.capture_failed SESSION_ENDED), as every other capture that cannot write does", async () => {
    const root = mkdtempSync(path.join(tmpdir(), "berth-lostwork-ended-"));
    const otherRoot = mkdtempSync(path.join(tmpdir(), "berth-lostwork-ender-"));
    const first = await start("lostwork-ended", root);
    const w = await runningTurnWithEdits(first, "ended");
    await halt(first, "SIGKILL");

    // Meanwhile the session ends for good elsewhere: its overlay goes with it.
    const other = await start("lostwork-ender", otherRoot);
    try {
      await other.ws.abandonSession({ sessionId: w.sessionId, reason: "test" });
    } finally {
      await halt(other, "SIGTERM");
    }

    const second = await start("lostwork-ended", root);
    try {
      const r = await sql<{ reason: string }>`SELECT reason FROM events WHERE workspace_id = ${w.workspaceId}::uuid AND kind = 'turn.capture_failed'`.execute(database.opened.db);
      expect(r.rows.map((x) => x.reason)).toEqual(["SESSION_ENDED"]);
      const kept = readdirSync(path.join(root, ".unsaved")).filter((d) => d.startsWith(w.workspaceId));
      expect(kept).toHaveLength(1);
      expect(existsSync(path.join(root, ".unsaved", kept[0]!, "ended.txt"))).toBe(true);
      expect(existsSync(w.turn.environmentPath)).toBe(false); // the path is free for the workspace's next environment
    } finally {
      await halt(second, "SIGTERM");
      rmSync(root, { recursive: true, force: true });
      rmSync(otherRoot, { recursive: true, force: true });
    }
  }, 90_000);

  it("SIGTERM during a running turn: the graceful stop captures it into the overlay before the process exits", async () => {
    const root = mkdtempSync(path.join(tmpdir(), "berth-lostwork-term-"));
    const first = await start("lostwork-sigterm", root);
    const w = await runningTurnWithEdits(first, "term");
    first.ws.close();
    first.turns.close();
    first.s.child.kill("SIGTERM");
    expect(await first.s.exited).toBe(0);
    // In the overlay before any restart: the stop itself captured it, and tore the directory down.
    const rows = await sql<{ path: string }>`SELECT path FROM overlay_files WHERE workspace_id = ${w.workspaceId}::uuid ORDER BY path`.execute(database.opened.db);
    expect(rows.rows.map((r) => r.path)).toEqual(["README.md", "term.txt"]);
    expect(existsSync(w.turn.environmentPath)).toBe(false);
    const turn = await sql<{ state: string; end_reason: string }>`SELECT state, end_reason FROM turns WHERE id = ${w.turn.turnId}::uuid`.execute(database.opened.db);
    expect(turn.rows[0]).toEqual({ state: "cancelled", end_reason: "server_shutdown" });

    // Another instance takes over the session (the stopped instance's work is stranded) and resumes it.
    const other = await start("lostwork-other", mkdtempSync(path.join(tmpdir(), "berth-lostwork-other-")));
    try {
      const { newSessionId } = await other.ws.resumeSession({ deadSessionId: w.sessionId, agentId: w.agentId });
      expect(text((await other.ws.readFile({ sessionId: newSessionId, path: "term.txt" })).content)).toBe("written before the term\n");
      expect((await failure(other.turns.endTurn({ turnId: w.turn.turnId, outcome: TurnOutcome.COMPLETED }))).reason).toBe("TURN_NOT_RUNNING");
    } finally {
      await halt(other, "SIGTERM");
      rmSync(root, { recursive: true, force: true });
    }
  });
});
