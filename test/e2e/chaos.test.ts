/**
 * The chaos test of the scale-out promise: several instances behave as one, and nothing
 * acknowledged is lost.
 *
 * Three real `berth serve` processes on one fresh PostgreSQL database (lease 4 s, GC every 1 s,
 * an environment root each) and a real git repository registered with its source path. 50 agent
 * sessions (ephemeral, distinct agent ids), each driven for 20 s by two loops that send every
 * call to a random instance: a heartbeat every ~1 s, and an op loop of WriteFile of the agent's
 * own files (half of them with expected_hash = the last acknowledged hash), ReadFile spot checks
 * and up to two BeginTurn / EndTurn pairs (a file written into the environment, EndTurn sent to a
 * random instance). One WatchEvents stream per instance from seq 0. At 8 s one instance is killed
 * with SIGKILL; a call that gets UNAVAILABLE is retried on another instance (counted, not a
 * failure). A session answered SESSION_STRANDED is resumed by its agent on an instance that
 * answers, as a real agent does (again after a pause while the answer is UNAVAILABLE
 * CAPTURE_PENDING: a turn that ran when the session was stranded is still being captured; or
 * DEADLINE_EXCEEDED: a retry of a resume that did happen answers ALREADY_RESUMED); the
 * heartbeats go on (through the survivors) until every check is done, so no session is
 * disconnected by the test itself.
 *
 * Checked afterwards, one `it` each (the run is in beforeAll):
 *   1.  every acknowledged write (WriteFile, or the file of an acknowledged EndTurn) is readable
 *       from each survivor, byte for byte, through the workspace's current session (a session of
 *       the killed instance: after its agent resumed it on a survivor);
 *   1b. the ReadFile spot checks during the run returned the last acknowledged content;
 *   1c. a WriteFile whose expected_hash is the last acknowledged hash of the file is not refused;
 *   2a. no session is stranded except those the killed instance owned (stranded after the kill):
 *       the agents heartbeat every ~1 s throughout. Judged by the documented bound: a strand at
 *       t is wrong when a heartbeat of that session sent at or after t - lease was acknowledged
 *       by t; one after a longer silence (a machine too loaded for the heartbeats to get
 *       through) is counted in the summary;
 *   2b. every session the killed instance owned is stranded within 30 s of the kill (lease + GC
 *       interval + the 15 s instance heartbeat timeout + slack) and resumed on a survivor;
 *   3.  every WatchEvents stream: seqs gap-free from 1 and in order; the killed instance's ends,
 *       the survivors' stay open and reach the database's head;
 *   4.  every call is answered as one instance would answer it: no error but UNAVAILABLE from the
 *       killed instance (after the kill), the lifecycle answers of stranded sessions, and the
 *       errors of a turn whose environment died with the killed instance.
 * A summary line (`[chaos] …`) gives the figures. BERTH_CHAOS_SEED=<n> replays the random choices
 * (the timing of three processes is not replayable; what is checked does not depend on it).
 *
 * Run it: `npm test` runs it with the rest (PostgreSQL required; ~30 s); `npm run test:chaos`
 * alone. Under load (load average 6–17 on 2 cores, four other test suites beside it) it first
 * found PostgreSQL deadlocks (multi-row writers of workspaces now lock in id order), then three
 * answers no single instance gives, all from a call forwarded through the instance that died
 * before relaying the answer: an EndTurn retry answered "captured: nothing" (EndTurn now replays
 * what it captured), a BeginTurn of a session stranded meanwhile answered TURN_CANCELLED (now
 * SESSION_STRANDED), and sessions disconnected while their heartbeats through other instances
 * waited for a flush (a Heartbeat served by a non-owner is now written before it answers, the
 * strand re-checks last_active_at in SQL, and the flush of other activity is lease / 8).
 * docs/decisions.md has the record.
 * On the tree it was written against (347710f), checks 1, 1b, 1c (stale overlay caches, refused
 * compare-and-set, acknowledged writes not stored), 2a (liveness read from one instance's
 * memory) and 4 (EndTurn on another instance) failed every run; 4 failed again, after the fixes,
 * for turns whose holder had just been killed (TURN_OWNER_UNREACHABLE until its heartbeat went
 * stale), until an unreachable holder whose name lock is free is taken for gone at once.
 */
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { TurnService } from "../../gen/berth/v1/turn_service_pb.js";
import { LifecycleState, TurnOutcome, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { createGrpcClient, GrpcCallError, type GrpcClient } from "../support/grpc-client.js";
import { needs } from "../support/services.js";
import { serve, type Served } from "../support/serve-process.js";

// ---- the knobs ----------------------------------------------------------------------------

const INSTANCES = 3;
const SESSIONS = 50;
const CHAOS_MS = 20_000;
const KILL_AT_MS = 8_000;
const LEASE_MS = 4_000;
const GC_INTERVAL_MS = 1_000;
const HEARTBEAT_MS = 1_000;
/** Kill → every session of the killed instance stranded (lease + GC + 15 s instance timeout + slack). */
const STRAND_DEADLINE_MS = 30_000;
/** Stranded → resumed by its agent's next heartbeat (every ~1 s). */
const RESUME_DEADLINE_MS = 15_000;
/** The survivors' streams reach the database's head within this. */
const STREAM_CATCH_UP_MS = 15_000;
const FILES_PER_AGENT = 4;
const TURNS_PER_AGENT = 2;
const UNARY_DEADLINE_MS = 5_000;
const TURN_DEADLINE_MS = 20_000;
/** Attempts of one call, each on another instance than the ones that answered UNAVAILABLE. */
const ATTEMPTS = 4;
const SEED = Number(process.env.BERTH_CHAOS_SEED || Math.floor(Math.random() * 2 ** 31));

/** mulberry32: the random choices of a run, replayable from SEED. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = prng(SEED);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
const sha = (b: Uint8Array): string => createHash("sha256").update(b).digest("hex");

/** A sleep that ends early when `signal` aborts. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** Polls `read` until `ok`, at most `timeoutMs`; returns whether it got there. */
async function until(read: () => Promise<boolean> | boolean, timeoutMs: number, everyMs = 250): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await read()) return true;
    if (Date.now() >= end) return false;
    await sleep(everyMs);
  }
}

// ---- the fleet ----------------------------------------------------------------------------

interface Instance {
  readonly index: number;
  readonly name: string;
  readonly served: Served;
  readonly ws: GrpcClient<typeof WorkspaceService>;
  readonly turns: GrpcClient<typeof TurnService>;
  /** Its BERTH_ENV_ROOT: an environment path under it lives on this instance's disk. */
  readonly envRoot: string;
  dead: boolean;
}

interface FileRecord {
  /** The last acknowledged content. */
  acked: Buffer | undefined;
  ackedOn: string;
  ackedAt: number;
  /** Contents of attempts since that ack that may have been stored (an UNAVAILABLE answer). */
  uncertain: Buffer[];
  /** An attempt answered DEADLINE_EXCEEDED may still be stored until the server's copy of its deadline: until then an ack does not settle `uncertain`. */
  lateUntil: number;
  viaTurn: boolean;
}

interface Agent {
  readonly id: string;
  readonly workspaceId: string;
  sessionId: string;
  /** Instance that served the create / the last resume, as the client saw it. */
  ownerSeen: string;
  readonly files: Map<string, FileRecord>;
  resuming: Promise<void> | undefined;
  readonly resumes: { from: string; to: string; on: string; at: number }[];
  turns: number;
  lastHeartbeatOk: number;
  maxHeartbeatGapMs: number;
  /** Every acknowledged heartbeat: when it was sent and acknowledged, for which session. */
  readonly beats: { sessionId: string; sent: number; acked: number }[];
}

interface Failure {
  readonly what: string;
  detail: string;
  /** The overlay row it is about: the database's own row is added to the detail. */
  readonly file?: { readonly workspaceId: string; readonly path: string; readonly acked?: string };
}

interface StreamRecord {
  readonly instance: string;
  readonly seqs: bigint[];
  ended: string | undefined;
}

function describeError(err: unknown): string {
  if (err instanceof GrpcCallError) {
    const info = err.errorInfo;
    return `${err.codeName}${info ? ` ${info.reason}` : ""}: ${err.details}`;
  }
  return err instanceof Error ? err.message : String(err);
}

const reasonOf = (err: unknown): string | undefined => (err instanceof GrpcCallError ? err.errorInfo?.reason : undefined);
const isUnavailable = (err: unknown): boolean => err instanceof GrpcCallError && err.codeName === "UNAVAILABLE";

needs({ postgres: true })("chaos: three instances, one killed with -9, 50 agents on random instances", () => {
  let database: TestDatabase;
  let tmp: string;
  const instances: Instance[] = [];
  const agents: Agent[] = [];
  const streams: StreamRecord[] = [];
  const streamAbort = new AbortController();
  const keepersStop = new AbortController();

  const stats = {
    calls: 0,
    answered: 0,
    unavailableFromKilled: 0,
    /** Sessions stranded (disconnected) after their agent's heartbeats stopped getting through for longer than the lease bound. */
    strandedAfterSilence: 0,
    /** UNAVAILABLE TURN_OWNER_UNREACHABLE from a survivor, naming the killed instance as the environment's holder. */
    ownerUnreachableAfterKill: 0,
    /** ResumeSession answered CAPTURE_PENDING (retried by the agent). */
    capturePending: 0,
    /** ResumeSession not answered within its deadline (retried by the agent). */
    resumeDeadlineExceeded: 0,
    unavailableRetried: 0,
    writesAcknowledged: 0,
    writesUncertain: 0,
    spotReads: 0,
    turnsBegun: 0,
    turnsEnded: 0,
    turnsLostToKill: 0,
    turnsOfMovedSessions: 0,
    resumes: 0,
    finalReads: 0,
  };
  /** What each check found wrong; empty is a pass. */
  const found = {
    lost: [] as Failure[],
    staleReads: [] as Failure[],
    casRefused: [] as Failure[],
    wrongStrands: [] as Failure[],
    killedNotStranded: [] as Failure[],
    killedNotResumed: [] as Failure[],
    streams: [] as Failure[],
    unexpected: [] as Failure[],
  };
  let victim: Instance | undefined;
  let killedAt = 0;
  /** When the chaos began: the time base of the findings and of the servers' lines in a report. */
  let startedAt = 0;
  /** Sessions the killed instance owned (active) when it died, from the database. */
  const ownedByVictim = new Map<string, { workspaceId: string; agentId: string }>();
  let strandDelays: number[] = [];
  /** The files of found.lost: the database holds another content than the acknowledged one, or holds it but an instance answered otherwise. */
  const lostKinds = { lostInDatabase: new Set<string>(), servedStale: new Set<string>() };
  let setupError: unknown;

  const survivors = () => instances.filter((i) => !i.dead);
  const unexpected = (what: string, err: unknown, inst?: Instance) =>
    found.unexpected.push({ what: `${what}${inst ? ` on ${inst.name}` : ""} at +${((Date.now() - startedAt) / 1000).toFixed(1)}s`, detail: describeError(err) });

  /**
   * Whether `err` is a survivor's UNAVAILABLE TURN_OWNER_UNREACHABLE naming the killed instance
   * (an incarnation of its name) as the holder of the session's environment: the honest
   * "retry" while PostgreSQL has not yet confirmed the holder gone.
   */
  async function ownerIsVictim(err: unknown): Promise<boolean> {
    if (reasonOf(err) !== "TURN_OWNER_UNREACHABLE" || !(err instanceof GrpcCallError)) return false;
    const owner = err.errorInfo?.metadata.owner_instance;
    if (!owner || !victim) return false;
    const rows = (await sql<{ name: string }>`SELECT name FROM instances WHERE id = ${owner}::uuid`.execute(db())).rows;
    return rows[0]?.name === victim.name;
  }

  /**
   * One call, sent to a random instance; UNAVAILABLE is retried on another one (`attempt` > 0
   * tells `fn` that an earlier attempt was answered UNAVAILABLE). The last error is thrown when
   * every attempt failed.
   */
  async function call<T>(what: string, fn: (inst: Instance, attempt: number) => Promise<T>): Promise<{ value: T; inst: Instance }> {
    const tried = new Set<Instance>();
    let last: unknown;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const candidates = instances.filter((i) => !tried.has(i));
      if (candidates.length === 0) break;
      const inst = pick(candidates);
      tried.add(inst);
      stats.calls++;
      try {
        const value = await fn(inst, attempt);
        stats.answered++;
        return { value, inst };
      } catch (err) {
        last = err;
        // The session's answer, whichever instance gives it: the agent retries the call itself.
        if (!isUnavailable(err) || reasonOf(err) === "CAPTURE_PENDING") throw err;
        if (inst === victim && killedAt > 0) stats.unavailableFromKilled++;
        else if (killedAt > 0 && (await ownerIsVictim(err))) stats.ownerUnreachableAfterKill++;
        else unexpected(`${what}: UNAVAILABLE from a live instance (retried)`, err, inst);
        stats.unavailableRetried++;
      }
    }
    throw last;
  }

  /** The agent's session was answered stranded: its agent resumes it on an instance that answers. */
  function resume(agent: Agent, dead: string): Promise<void> {
    if (agent.sessionId !== dead) return Promise.resolve();
    agent.resuming ??= (async () => {
      try {
        for (;;) {
          try {
            const { value, inst } = await call("ResumeSession", (i) =>
              i.ws.resumeSession({ deadSessionId: dead, agentId: agent.id }, { deadlineMs: UNARY_DEADLINE_MS }),
            );
            agent.sessionId = value.newSessionId;
            agent.ownerSeen = inst.name;
            agent.resumes.push({ from: dead, to: value.newSessionId, on: inst.name, at: Date.now() });
            stats.resumes++;
            return;
          } catch (err) {
            // Retried, as an agent does: the capture of a turn that ran when the session was
            // stranded is still going (documented), or the answer did not come in time (a loaded
            // machine; the resume may have happened: a retry then answers ALREADY_RESUMED).
            const pending = reasonOf(err) === "CAPTURE_PENDING";
            const late = err instanceof GrpcCallError && err.codeName === "DEADLINE_EXCEEDED";
            if ((!pending && !late) || keepersStop.signal.aborted) throw err;
            if (pending) stats.capturePending++;
            else stats.resumeDeadlineExceeded++;
            await sleep(200);
          }
        }
      } catch (err) {
        const newId = err instanceof GrpcCallError ? err.errorInfo?.metadata.new_session_id : undefined;
        if (reasonOf(err) === "ALREADY_RESUMED" && newId) {
          // An earlier attempt (answered UNAVAILABLE) won.
          agent.sessionId = newId;
          agent.ownerSeen = "?";
          agent.resumes.push({ from: dead, to: newId, on: "?", at: Date.now() });
          stats.resumes++;
        } else unexpected(`ResumeSession of ${agent.id}`, err);
      } finally {
        agent.resuming = undefined;
      }
    })();
    return agent.resuming;
  }

  /**
   * What an agent does with an error that is not UNAVAILABLE: a stranded session is resumed, a
   * resumed one followed; true when the call may be retried. Anything else is unexpected.
   */
  async function handled(agent: Agent, what: string, err: unknown, sessionId: string): Promise<boolean> {
    const reason = reasonOf(err);
    if (reason === "SESSION_STRANDED") {
      await resume(agent, sessionId);
      return agent.sessionId !== sessionId;
    }
    const newId = err instanceof GrpcCallError ? err.errorInfo?.metadata.new_session_id : undefined;
    if (reason === "SESSION_RESUMED" && newId) {
      if (agent.sessionId === sessionId) agent.sessionId = newId;
      return true;
    }
    if (agent.resuming) {
      // The session moved under this call (the other loop is resuming it).
      await agent.resuming;
      if (agent.sessionId !== sessionId) return true;
    }
    unexpected(`${what} of ${agent.id}`, err);
    return false;
  }

  async function heartbeatLoop(agent: Agent): Promise<void> {
    const signal = keepersStop.signal;
    while (!signal.aborted) {
      await sleep(HEARTBEAT_MS * (0.85 + 0.3 * random()), signal);
      if (signal.aborted) break;
      const sessionId = agent.sessionId;
      const sent = Date.now();
      try {
        await call("Heartbeat", (i) => i.ws.heartbeat({ sessionId }, { deadlineMs: UNARY_DEADLINE_MS }));
        const now = Date.now();
        agent.beats.push({ sessionId, sent, acked: now });
        agent.maxHeartbeatGapMs = Math.max(agent.maxHeartbeatGapMs, now - agent.lastHeartbeatOk);
        agent.lastHeartbeatOk = now;
      } catch (err) {
        if (isUnavailable(err)) unexpected(`Heartbeat of ${agent.id}: no instance answered`, err);
        else await handled(agent, "Heartbeat", err, sessionId);
      }
    }
  }

  function recordOf(agent: Agent, p: string): FileRecord {
    let rec = agent.files.get(p);
    if (!rec) {
      rec = { acked: undefined, ackedOn: "", ackedAt: 0, uncertain: [], lateUntil: 0, viaTurn: false };
      agent.files.set(p, rec);
    }
    return rec;
  }

  async function writeOp(agent: Agent): Promise<void> {
    const p = `agents/${agent.id}/f${Math.floor(random() * FILES_PER_AGENT)}.txt`;
    const rec = recordOf(agent, p);
    // Three contents per file, each write a change: a content the file had before comes back.
    const ackedVariant = rec.acked ? Number(/variant (\d)/.exec(rec.acked.toString())?.[1]) : -1;
    const variants = [0, 1, 2].filter((v) => v !== ackedVariant);
    const variant = pick(variants);
    const content = Buffer.from(`${agent.id} ${p} variant ${variant}\n`.repeat(1 + variant * 7));
    // A compare-and-set against the last acknowledged content, unless an attempt may have landed.
    let expectedHash = random() < 0.5 && rec.uncertain.length === 0 ? (rec.acked ? sha(rec.acked) : "") : undefined;
    for (let round = 0; round < 3; round++) {
      const sessionId = agent.sessionId;
      try {
        const { value, inst } = await call("WriteFile", (i, attempt) => {
          if (attempt > 0) {
            // The previous attempt was answered UNAVAILABLE: it may have been stored.
            rec.uncertain.push(content);
            expectedHash = undefined;
          }
          return i.ws.writeFile({ sessionId, path: p, content, ...(expectedHash === undefined ? {} : { expectedHash }) }, { deadlineMs: UNARY_DEADLINE_MS });
        });
        rec.acked = content;
        rec.ackedOn = inst.name;
        rec.ackedAt = Date.now();
        if (rec.ackedAt >= rec.lateUntil) rec.uncertain = [];
        stats.writesAcknowledged++;
        if (value.newHash !== sha(content)) found.lost.push({ what: `WriteFile ${agent.id} ${p} on ${inst.name}`, detail: `answered new_hash ${value.newHash}, the content's is ${sha(content)}` });
        return;
      } catch (err) {
        if (isUnavailable(err)) {
          rec.uncertain.push(content);
          unexpected(`WriteFile of ${agent.id}: no instance answered`, err);
          return;
        }
        if (err instanceof GrpcCallError && err.codeName === "DEADLINE_EXCEEDED") {
          // Too slow (a failure of its own, below), and the outcome is unknown: the server may
          // still store it until its copy of the deadline (it refuses to once it knows).
          rec.uncertain.push(content);
          rec.lateUntil = Date.now() + UNARY_DEADLINE_MS;
          unexpected(`WriteFile of ${agent.id}`, err);
          return;
        }
        if (reasonOf(err) === "HASH_MISMATCH" && expectedHash !== undefined) {
          const current = err instanceof GrpcCallError ? err.errorInfo?.metadata.current_hash : undefined;
          found.casRefused.push({
            file: { workspaceId: agent.workspaceId, path: p },
            what: `WriteFile ${agent.id} ${p} expected_hash=${expectedHash.slice(0, 12) || '""'} (the last acknowledged, on ${rec.ackedOn || "-"} ${rec.ackedAt ? Date.now() - rec.ackedAt : "-"} ms before)`,
            detail: `${describeError(err)}; the server's current_hash ${current?.slice(0, 12) ?? "?"}`,
          });
          return;
        }
        if (!(await handled(agent, "WriteFile", err, sessionId))) return;
      }
    }
  }

  async function readOp(agent: Agent): Promise<void> {
    const certain = [...agent.files.entries()].filter(([, r]) => r.acked !== undefined && r.uncertain.length === 0);
    if (certain.length === 0) return;
    const [p, rec] = pick(certain);
    const expected = rec.acked!;
    const sessionId = agent.sessionId;
    try {
      const { value, inst } = await call("ReadFile", (i) => i.ws.readFile({ sessionId, path: p }, { deadlineMs: UNARY_DEADLINE_MS }));
      stats.spotReads++;
      if (Buffer.compare(Buffer.from(value.content), expected) !== 0) {
        found.staleReads.push({
          file: { workspaceId: agent.workspaceId, path: p },
          what: `ReadFile ${agent.id} ${p} on ${inst.name}, ${Date.now() - rec.ackedAt} ms after its write was acknowledged by ${rec.ackedOn}`,
          detail: `got ${sha(value.content).slice(0, 12)} (${value.content.byteLength} B), acknowledged ${sha(expected).slice(0, 12)} (${expected.byteLength} B)`,
        });
      }
    } catch (err) {
      if (isUnavailable(err)) unexpected(`ReadFile of ${agent.id}: no instance answered`, err);
      else if (reasonOf(err) === "FILE_NOT_FOUND") {
        found.staleReads.push({
          file: { workspaceId: agent.workspaceId, path: p },
          what: `ReadFile ${agent.id} ${p}, ${Date.now() - rec.ackedAt} ms after its write was acknowledged by ${rec.ackedOn}`,
          detail: describeError(err),
        });
      } else await handled(agent, "ReadFile", err, sessionId);
    }
  }

  /** Whether the session is stranded (or already resumed) now, asked of a survivor. */
  async function strandedNow(sessionId: string): Promise<boolean> {
    const inst = survivors()[0]!;
    try {
      stats.calls++;
      const { workspace } = await inst.ws.getWorkspace({ sessionId }, { deadlineMs: UNARY_DEADLINE_MS });
      stats.answered++;
      return workspace?.lifecycleState === LifecycleState.STRANDED;
    } catch (err) {
      return reasonOf(err) === "SESSION_RESUMED";
    }
  }

  async function turnOp(agent: Agent): Promise<void> {
    const k = agent.turns++;
    const sessionId = agent.sessionId;
    const rel = `agents/${agent.id}/turn-${k}.txt`;
    const content = Buffer.from(`written in turn ${k} of ${agent.id}\n`);
    let begun: { turnId: string; environmentPath: string; on: Instance };
    try {
      const { value, inst } = await call("BeginTurn", (i) => i.turns.beginTurn({ sessionId, clientTurnId: `${agent.id}-turn-${k}` }, { deadlineMs: TURN_DEADLINE_MS }));
      begun = { turnId: value.turnId, environmentPath: value.environmentPath, on: inst };
      stats.turnsBegun++;
    } catch (err) {
      if (isUnavailable(err)) unexpected(`BeginTurn of ${agent.id}: no instance answered`, err);
      else await handled(agent, "BeginTurn", err, sessionId);
      return;
    }
    mkdirSync(path.dirname(path.join(begun.environmentPath, rel)), { recursive: true });
    writeFileSync(path.join(begun.environmentPath, rel), content);
    /** The turn's environment died with the killed instance: its errors are the kill's. */
    // Whichever instance answered BeginTurn (it may have forwarded it), the environment is on
    // the disk of the instance whose root holds its path.
    const lostToKill = () => killedAt > 0 && victim !== undefined && begun.environmentPath.startsWith(victim.envRoot + path.sep);
    const end = (i: Instance) => i.turns.endTurn({ turnId: begun.turnId, outcome: TurnOutcome.COMPLETED }, { deadlineMs: TURN_DEADLINE_MS });
    let ended: { captured: string[]; on: Instance } | undefined;
    try {
      const { value, inst } = await call("EndTurn", end);
      ended = { captured: value.capturedPaths, on: inst };
    } catch (err) {
      if (lostToKill()) {
        stats.turnsLostToKill++;
        return;
      }
      if (agent.sessionId !== sessionId || (await strandedNow(sessionId))) {
        // Stranded during the turn (the stranding is what 2a or 2b judges): the turn's answer is
        // a stranded session's, as one instance gives it (cancelled; or CAPTURE_INCOMPLETE, the
        // environment kept). Its agent resumes the session.
        stats.turnsOfMovedSessions++;
        if (agent.sessionId === sessionId) await resume(agent, sessionId);
        return;
      }
      unexpected(`EndTurn of ${agent.id} (begun on ${begun.on.name})`, err);
      // The check above is recorded; the instance that began the turn ends it, so that the rest
      // of the run (the turn's file among the acknowledged writes) still means something.
      if (reasonOf(err) !== "TURN_NOT_ON_THIS_SERVER" || begun.on.dead) return;
      try {
        stats.calls++;
        const value = await end(begun.on);
        stats.answered++;
        ended = { captured: value.capturedPaths, on: begun.on };
      } catch (again) {
        if (!lostToKill()) unexpected(`EndTurn of ${agent.id} on the instance that began it`, again, begun.on);
        return;
      }
    }
    stats.turnsEnded++;
    const rec = recordOf(agent, rel);
    rec.acked = content;
    rec.ackedOn = ended.on.name;
    rec.ackedAt = Date.now();
    if (rec.ackedAt >= rec.lateUntil) rec.uncertain = [];
    rec.viaTurn = true;
    stats.writesAcknowledged++;
    if (!ended.captured.includes(rel)) {
      found.lost.push({ what: `EndTurn ${agent.id} turn ${k} (begun on ${begun.on.name}, ended on ${ended.on.name})`, detail: `acknowledged without capturing ${rel} (captured: ${ended.captured.join(", ") || "nothing"})` });
    }
  }

  async function opLoop(agent: Agent, end: number): Promise<void> {
    while (Date.now() < end) {
      await sleep(300 + 400 * random());
      if (Date.now() >= end) break;
      const r = random();
      if (r < 0.06 && agent.turns < TURNS_PER_AGENT) await turnOp(agent);
      else if (r < 0.6) await writeOp(agent);
      else await readOp(agent);
    }
  }

  function watch(inst: Instance): StreamRecord {
    const rec: StreamRecord = { instance: inst.name, seqs: [], ended: undefined };
    streams.push(rec);
    void (async () => {
      try {
        for await (const m of inst.ws.watchEvents({ afterSeq: 0n }, { signal: streamAbort.signal })) rec.seqs.push(m.event!.seq);
        rec.ended = "the server ended the stream";
      } catch (err) {
        rec.ended = streamAbort.signal.aborted ? "cancelled by the test" : describeError(err);
      }
    })();
    return rec;
  }

  const db = () => database.opened.db;

  beforeAll(async () => {
    try {
      await run();
    } catch (err) {
      setupError = err;
      throw err;
    }
  }, 300_000);

  async function run(): Promise<void> {
    database = await createTestDatabase("postgres");
    tmp = mkdtempSync(path.join(tmpdir(), "berth-chaos-"));
    // A real repository: turns materialise its tree.
    const source = path.join(tmp, "source");
    mkdirSync(path.join(source, "src"), { recursive: true });
    writeFileSync(path.join(source, "README.md"), "# chaos\n");
    writeFileSync(path.join(source, "src/app.ts"), "export const answer = 42;\n");
    const git = (...args: string[]) => execFileSync("git", ["-c", "user.email=chaos@berth.test", "-c", "user.name=chaos", "-c", "init.defaultBranch=main", ...args], { cwd: source, encoding: "utf8" }).trim();
    git("init", "-q");
    git("add", ".");
    git("commit", "-q", "-m", "base");
    const baseCommit = git("rev-parse", "HEAD");

    const names = Array.from({ length: INSTANCES }, (_, i) => `chaos-${String.fromCharCode(97 + i)}`);
    const served = await Promise.all(
      names.map((name) =>
        serve({
          DATABASE_URL: database.url!,
          BERTH_INSTANCE_NAME: name,
          BERTH_SESSION_LEASE_MS: String(LEASE_MS),
          BERTH_GC_INTERVAL_MS: String(GC_INTERVAL_MS),
          BERTH_ENV_ROOT: path.join(tmp, `envs-${name}`),
        }),
      ),
    );
    for (const [index, s] of served.entries()) {
      instances.push({ index, name: names[index]!, served: s, ws: createGrpcClient(WorkspaceService, s.grpc), turns: createGrpcClient(TurnService, s.grpc), envRoot: path.join(tmp, `envs-${names[index]!}`), dead: false });
    }
    victim = pick(instances);
    for (const inst of instances) watch(inst);

    const repoId = (await instances[0]!.ws.registerRepository({ name: "chaos", sourcePath: source })).repository!.id;
    // Each agent heartbeats from the moment its workspace exists; the ops start together.
    const keepers: Promise<void>[] = [];
    for (let i = 0; i < SESSIONS; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(10, SESSIONS - i) }, async (_, j) => {
          const id = `chaos-agent-${String(i + j).padStart(2, "0")}`;
          const { value, inst } = await call("CreateWorkspace", (x) =>
            x.ws.createWorkspace({ repoId, baseCommit, mode: WorkspaceMode.EPHEMERAL, agentId: id, intent: "chaos" }, { deadlineMs: UNARY_DEADLINE_MS }),
          );
          const w = value.workspace!;
          const agent: Agent = {
            id, workspaceId: w.workspaceId, sessionId: w.sessionId, ownerSeen: inst.name, files: new Map(), resuming: undefined,
            resumes: [], turns: 0, lastHeartbeatOk: Date.now(), maxHeartbeatGapMs: 0, beats: [],
          };
          keepers.push(heartbeatLoop(agent));
          return agent;
        }),
      );
      agents.push(...batch);
    }

    // ---- the chaos --------------------------------------------------------------------------
    const t0 = Date.now();
    startedAt = t0;
    const ops = agents.map((a) => opLoop(a, t0 + CHAOS_MS));
    const kill = (async () => {
      await sleep(KILL_AT_MS);
      const v = victim;
      killedAt = Date.now();
      v.dead = true;
      v.served.child.kill("SIGKILL");
      const exited = await Promise.race([v.served.exited.then(() => true), sleep(10_000).then(() => false)]);
      if (!exited) throw new Error(`${v.name} did not exit within 10 s of SIGKILL`);
      // Its connections are gone once its instance lock's connection is: what it committed is all there is.
      const gone = await until(async () => {
        const r = await sql<{ n: string }>`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = ${`berth instance ${v.name}`}`.execute(db());
        return Number(r.rows[0]!.n) === 0;
      }, 10_000);
      if (!gone) throw new Error(`the instance lock connection of ${v.name} was still open 10 s after it was killed`);
      const owned = await sql<{ session_id: string; id: string; agent_id: string }>`
        SELECT w.session_id, w.id, w.agent_id FROM workspaces w JOIN instances i ON i.id = w.owner_instance
        WHERE i.name = ${v.name} AND w.lifecycle = 'active'`.execute(db());
      for (const r of owned.rows) ownedByVictim.set(r.session_id, { workspaceId: r.id, agentId: r.agent_id });
      // The survivors may have stranded some already (a holder whose instance lock is free is
      // gone at once): an owner_lost strand since the kill is of the killed instance's sessions,
      // the only instance that died.
      const early = await sql<{ session_id: string; workspace_id: string; agent_id: string }>`
        SELECT session_id, workspace_id, agent_id FROM events
        WHERE kind = 'session.stranded' AND reason = 'owner_lost' AND occurred_at >= ${new Date(killedAt)}`.execute(db());
      for (const r of early.rows) ownedByVictim.set(r.session_id, { workspaceId: r.workspace_id, agentId: r.agent_id });
    })();
    await Promise.all([...ops, kill]);

    // ---- the killed instance's sessions: stranded, then resumed by their agents -------------
    const strandedAt = new Map<string, number>();
    const readStrands = async () => {
      const r = await sql<{ session_id: string; occurred_at: Date }>`
        SELECT session_id, occurred_at FROM events WHERE kind = 'session.stranded' AND session_id = ANY(${[...ownedByVictim.keys()]}::uuid[])`.execute(db());
      for (const row of r.rows) strandedAt.set(row.session_id, row.occurred_at.getTime());
      return strandedAt.size === ownedByVictim.size;
    };
    await until(readStrands, Math.max(0, killedAt + STRAND_DEADLINE_MS - Date.now()));
    for (const [s, owner] of ownedByVictim) {
      const at = strandedAt.get(s);
      if (at === undefined) found.killedNotStranded.push({ what: `${owner.agentId} session ${s}`, detail: `not stranded ${STRAND_DEADLINE_MS / 1000} s after ${victim.name} was killed` });
      else strandDelays.push(at - killedAt);
    }
    strandDelays = strandDelays.sort((x, y) => x - y);
    const agentOf = new Map(agents.map((a) => [a.id, a]));
    const resumedFrom = (s: string) => agentOf.get(ownedByVictim.get(s)!.agentId)!.resumes.find((r) => r.from === s);
    await until(() => [...strandedAt.keys()].every((s) => resumedFrom(s) !== undefined), RESUME_DEADLINE_MS);
    for (const s of strandedAt.keys()) {
      const r = resumedFrom(s);
      const who = ownedByVictim.get(s)!.agentId;
      if (!r) found.killedNotResumed.push({ what: `${who} session ${s}`, detail: `stranded but not resumed by its agent within ${RESUME_DEADLINE_MS / 1000} s; its turns: ${await turnsOf(ownedByVictim.get(s)!.workspaceId)}` });
      else if (r.on === victim.name) found.killedNotResumed.push({ what: `${who} session ${s}`, detail: `resumed on the killed instance?` });
    }

    // ---- 1. every acknowledged write, from each survivor ------------------------------------
    const checks: (() => Promise<void>)[] = [];
    for (const agent of agents) {
      for (const [p, rec] of agent.files) {
        if (rec.acked === undefined && rec.uncertain.length === 0) continue;
        if (rec.uncertain.length > 0) stats.writesUncertain++;
        for (const inst of survivors()) {
          checks.push(async () => {
            for (let round = 0; round < 3; round++) {
              const sessionId = agent.sessionId;
              try {
                stats.calls++;
                const got = Buffer.from((await inst.ws.readFile({ sessionId, path: p }, { deadlineMs: UNARY_DEADLINE_MS })).content);
                stats.answered++;
                stats.finalReads++;
                const ok = [...(rec.acked ? [rec.acked] : []), ...rec.uncertain].some((c) => Buffer.compare(c, got) === 0);
                if (!ok) {
                  found.lost.push({
                    file: { workspaceId: agent.workspaceId, path: p, acked: rec.acked && sha(rec.acked) },
                    what: `${agent.id} ${p}${rec.viaTurn ? " (a turn's file)" : ""} read on ${inst.name}`,
                    detail: `got ${sha(got).slice(0, 12)} (${got.byteLength} B), acknowledged ${rec.acked ? `${sha(rec.acked).slice(0, 12)} (${rec.acked.byteLength} B) by ${rec.ackedOn}` : "nothing"}${rec.uncertain.length ? ` (+${rec.uncertain.length} unanswered attempts)` : ""}`,
                  });
                }
                return;
              } catch (err) {
                if (reasonOf(err) === "FILE_NOT_FOUND" && rec.acked === undefined) return;
                const moved = ["SESSION_STRANDED", "SESSION_RESUMED"].includes(reasonOf(err) ?? "");
                if (!moved || !(await handled(agent, "ReadFile (final)", err, sessionId))) {
                  found.lost.push({ file: { workspaceId: agent.workspaceId, path: p, acked: rec.acked && sha(rec.acked) }, what: `${agent.id} ${p}${rec.viaTurn ? " (a turn's file)" : ""} read on ${inst.name}`, detail: describeError(err) });
                  return;
                }
              }
            }
            found.lost.push({ what: `${agent.id} ${p} read on ${inst.name}`, detail: "the session kept moving (3 resumes)" });
          });
        }
      }
    }
    // Eight at a time: the check is not a load test.
    await Promise.all(Array.from({ length: 8 }, async () => {
      for (let c = checks.shift(); c; c = checks.shift()) await c();
    }));

    // ---- 2a. strandings of sessions the killed instance did not own --------------------------
    const strands = await sql<{ session_id: string; agent_id: string; reason: string; occurred_at: Date }>`
      SELECT session_id, agent_id, reason, occurred_at FROM events WHERE kind = 'session.stranded' ORDER BY seq`.execute(db());
    for (const row of strands.rows) {
      const t = row.occurred_at.getTime();
      if (ownedByVictim.has(row.session_id) && t >= killedAt) continue;
      const agent = agentOf.get(row.agent_id);
      // The promise (docs/lifecycle.md, "Bounds"): a heartbeat recorded at r (between its send
      // and its acknowledgement) is in the owner's memory or in PostgreSQL before it is
      // acknowledged, and the strand statement re-checks last_active_at under the row lock; it
      // holds the session until r + lease. So a strand decided at t is wrong when some heartbeat
      // of that session was sent at or after t - lease and acknowledged by t. A strand after a
      // longer silence — the machine too loaded for the agent's heartbeats to get through — is
      // counted, not failed.
      const covered = agent?.beats.some((b) => b.sessionId === row.session_id && b.sent >= t - LEASE_MS && b.acked <= t);
      if (!covered) {
        stats.strandedAfterSilence++;
        continue;
      }
      found.wrongStrands.push({
        what: `${row.agent_id} session ${row.session_id} (${agent?.resumes.some((r) => r.to === row.session_id) ? "a resumed session" : "as created"})`,
        detail: `stranded "${row.reason}" at +${((t - t0) / 1000).toFixed(1)} s${killedAt && t < killedAt ? " (before the kill)" : ""}; its agent's longest gap between acknowledged heartbeats ${agent?.maxHeartbeatGapMs ?? "?"} ms (lease ${LEASE_MS} ms)`,
      });
    }

    // ---- 3. the survivors' streams reach the head -------------------------------------------
    const head = async () => BigInt((await sql<{ last_seq: string }>`SELECT last_seq FROM outbox_head WHERE id = 1`.execute(db())).rows[0]!.last_seq);
    const target = await head();
    const live = streams.filter((s) => s.instance !== victim!.name);
    await until(() => live.every((s) => (s.seqs.at(-1) ?? 0n) >= target || s.ended !== undefined), STREAM_CATCH_UP_MS);
    keepersStop.abort();
    await Promise.all(keepers);
    streamAbort.abort();
    for (const s of streams) {
      const killed = s.instance === victim.name;
      let gaps = 0;
      for (let i = 0; i < s.seqs.length; i++) {
        const want = i === 0 ? 1n : s.seqs[i - 1]! + 1n;
        if (s.seqs[i] !== want) {
          if (gaps++ < 5) found.streams.push({ what: `WatchEvents on ${s.instance}${killed ? " (killed)" : ""}`, detail: `event #${i} has seq ${s.seqs[i]}, expected ${want}` });
        }
      }
      if (gaps > 5) found.streams.push({ what: `WatchEvents on ${s.instance}`, detail: `${gaps} gaps or disorders in all` });
      if (!killed) {
        if (s.ended !== undefined && s.ended !== "cancelled by the test") found.streams.push({ what: `WatchEvents on ${s.instance}`, detail: `ended early at seq ${s.seqs.at(-1) ?? "-"}: ${s.ended}` });
        const lastSeq = s.seqs.at(-1) ?? 0n;
        if (lastSeq < target) found.streams.push({ what: `WatchEvents on ${s.instance}`, detail: `reached seq ${lastSeq} of the head ${target} within ${STREAM_CATCH_UP_MS / 1000} s` });
      } else if (s.ended === undefined || s.ended === "cancelled by the test") {
        found.streams.push({ what: `WatchEvents on ${s.instance} (killed)`, detail: "did not end when its server was killed" });
      }
    }

    // What the database holds for each file a finding is about (a stale cache, or a lost row?).
    for (const f of [...found.lost, ...found.staleReads, ...found.casRefused]) {
      if (!f.file) continue;
      const r = await sql<{ sha256: string | null; lifecycle: string }>`
        SELECT o.sha256, w.lifecycle FROM workspaces w LEFT JOIN overlay_files o ON o.workspace_id = w.id AND o.path = ${f.file.path}
        WHERE w.id = ${f.file.workspaceId}::uuid`.execute(db());
      const row = r.rows[0];
      f.detail += `; now in the database: ${row?.sha256 ? row.sha256.slice(0, 12) : "no row"} (workspace ${row?.lifecycle ?? "?"})`;
      if (found.lost.includes(f) && f.file.acked !== undefined) {
        const where = row?.sha256 === f.file.acked ? "servedStale" : "lostInDatabase";
        lostKinds[where].add(`${f.file.workspaceId} ${f.file.path}`);
      }
    }

    const gapMax = Math.max(...agents.map((a) => a.maxHeartbeatGapMs));
    console.log(
      `[chaos] seed=${SEED} instances=${INSTANCES} killed=${victim.name} sessions=${SESSIONS} calls=${stats.calls} answered=${stats.answered} ` +
        `writes acknowledged=${stats.writesAcknowledged} (paths with unanswered attempts ${stats.writesUncertain}) spot reads=${stats.spotReads} final reads=${stats.finalReads} ` +
        `turns begun=${stats.turnsBegun} ended=${stats.turnsEnded} lost to the kill=${stats.turnsLostToKill} of stranded sessions=${stats.turnsOfMovedSessions} kills=1 ` +
        `UNAVAILABLE retried=${stats.unavailableRetried} (from the killed instance ${stats.unavailableFromKilled}, its environments unreachable from a survivor ${stats.ownerUnreachableAfterKill}) resumes=${stats.resumes} (retried after CAPTURE_PENDING ${stats.capturePending}, after DEADLINE_EXCEEDED ${stats.resumeDeadlineExceeded}) ` +
        `killed instance's sessions=${ownedByVictim.size} stranded=${strandDelays.length} (max ${strandDelays.length ? (strandDelays.at(-1)! / 1000).toFixed(1) : "-"} s after the kill) ` +
        `| lost=${found.lost.length} (files whose acknowledged content is not in the database ${lostKinds.lostInDatabase.size}, in it but answered otherwise ${lostKinds.servedStale.size}) stale reads=${found.staleReads.length} CAS refused=${found.casRefused.length} wrongly stranded=${found.wrongStrands.length} (stranded after a silence beyond the bound ${stats.strandedAfterSilence}) ` +
        `not stranded=${found.killedNotStranded.length} not resumed=${found.killedNotResumed.length} stream faults=${found.streams.length} unexpected errors=${found.unexpected.length} ` +
        `| longest heartbeat gap ${gapMax} ms, event head ${target}, streams ${streams.map((s) => `${s.instance}:${s.seqs.length}`).join(" ")}`,
    );
  }

  afterAll(async () => {
    keepersStop.abort();
    streamAbort.abort();
    for (const i of instances) {
      i.ws.close();
      i.turns.close();
      if (i.served.child.exitCode === null) i.served.child.kill("SIGKILL");
    }
    await Promise.all(instances.map((i) => i.served.exited));
    await database?.drop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  /** The turns of a workspace as the database has them, each with the instance that ran it: a finding's context. */
  async function turnsOf(workspaceId: string): Promise<string> {
    const r = await sql<{ state: string; end_reason: string; name: string | null; alive: boolean; started: number; ended: number | null }>`
      SELECT t.state, t.end_reason, i.name, (i.stopped_at IS NULL) AS alive,
             extract(epoch FROM t.started_at) * 1000 AS started, extract(epoch FROM t.ended_at) * 1000 AS ended
      FROM turns t LEFT JOIN instances i ON i.id = t.instance_id WHERE t.workspace_id = ${workspaceId}::uuid ORDER BY t.seq`.execute(db());
    const rel = (ms: number | null) => (ms === null ? "-" : `+${((Number(ms) - startedAt) / 1000).toFixed(1)}s`);
    return r.rows.map((t) => `${t.state}${t.end_reason ? `(${t.end_reason})` : ""} on ${t.name ?? "?"}${t.alive ? "" : " (stopped)"} ${rel(t.started)}..${rel(t.ended)}`).join(", ") || "none";
  }

  /** The findings as a message: how many, and the first few. */
  const report = (title: string, xs: readonly Failure[]): string => {
    if (setupError !== undefined) return `the run failed: ${describeError(setupError)}`;
    const groups = new Map<string, number>();
    for (const x of xs) {
      const kind = x.detail.replace(/[0-9a-f]{8}-[0-9a-f-]{27}|[0-9a-f]{12,}|\d+/g, "#");
      groups.set(kind, (groups.get(kind) ?? 0) + 1);
    }
    return `${title}: ${xs.length}\n` + xs.slice(0, 12).map((x) => `  - ${x.what}: ${x.detail}`).join("\n") +
      (xs.length > 12 ? `\n  … and ${xs.length - 12} more` : "") +
      `\n  by kind: ${[...groups].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([k, n]) => `${n}× ${k}`).join("; ")}` +
      (xs.length > 0 ? `\n${serverSide()}` : "");
  };

  /**
   * What the servers logged that bears on a finding: their warnings and errors, and their
   * slowest calls (a client's DEADLINE_EXCEEDED is a call the server took too long to answer).
   */
  const serverSide = (): string => {
    const at = (l: Record<string, unknown>) => (typeof l.time === "number" ? `+${((l.time - startedAt) / 1000).toFixed(1)}s` : "?");
    const out: string[] = [];
    for (const i of instances) {
      const lines = i.served.lines;
      const warnings = lines.filter((l) => typeof l.level === "number" && l.level >= 40 && l.msg !== "rpc failed on the server's side");
      const slow = lines.filter((l) => typeof l.durationMs === "number" && l.durationMs > 2000).sort((a, b) => (b.durationMs as number) - (a.durationMs as number));
      out.push(`  ${i.name}${i.dead ? " (killed)" : ""}: ${warnings.length} warnings, ${slow.length} calls over 2 s`);
      for (const l of slow.slice(0, 8)) out.push(`    slow ${at(l)} ${String(l.method)} ${String(l.code)} ${String(l.durationMs)} ms ${l.captureWaitMs === undefined ? "" : `(waited ${String(l.captureWaitMs)} ms for a capture)`}`);
      for (const l of warnings.slice(0, 8)) out.push(`    warn ${at(l)} ${String(l.msg)}${l.err ? `: ${JSON.stringify(l.err).slice(0, 300)}` : ""}`);
    }
    return `  on the servers' side:\n${out.join("\n")}`;
  };

  it("1. every acknowledged write is readable afterwards from each survivor, byte for byte", () => {
    expect(setupError).toBeUndefined();
    expect(stats.writesAcknowledged).toBeGreaterThan(SESSIONS);
    expect(found.lost.length, report("acknowledged writes lost", found.lost)).toBe(0);
  });

  it("1b. the ReadFile spot checks during the run return the last acknowledged content", () => {
    expect(setupError).toBeUndefined();
    expect(stats.spotReads).toBeGreaterThan(0);
    expect(found.staleReads.length, report("spot reads that missed an acknowledged write", found.staleReads)).toBe(0);
  });

  it("1c. a WriteFile with expected_hash = the last acknowledged hash is not refused", () => {
    expect(setupError).toBeUndefined();
    expect(found.casRefused.length, report("compare-and-set writes refused against the acknowledged content", found.casRefused)).toBe(0);
  });

  it("2a. no session is stranded but those the killed instance owned (the agents heartbeat throughout)", () => {
    expect(setupError).toBeUndefined();
    expect(found.wrongStrands.length, report("sessions stranded while their agent heartbeated", found.wrongStrands)).toBe(0);
  });

  it(`2b. every session of the killed instance is stranded within ${STRAND_DEADLINE_MS / 1000} s and resumed on a survivor`, () => {
    expect(setupError).toBeUndefined();
    expect(ownedByVictim.size).toBeGreaterThan(0);
    const all = [...found.killedNotStranded, ...found.killedNotResumed];
    expect(all.length, report("sessions of the killed instance not stranded / resumed", all)).toBe(0);
  });

  it("3. event seqs are gap-free and in order on every WatchEvents stream; the survivors' reach the head", () => {
    expect(setupError).toBeUndefined();
    expect(found.streams.length, report("stream faults", found.streams)).toBe(0);
  });

  it("4. every call is answered as one instance would: no error but UNAVAILABLE from the killed instance", () => {
    expect(setupError).toBeUndefined();
    expect(found.unexpected.length, report("unexpected errors", found.unexpected)).toBe(0);
  });
});
