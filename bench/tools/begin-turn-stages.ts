/**
 * Where a warm BeginTurn's time goes, from the client's side: the scenario's loop (bench/scenarios/
 * begin-turn.ts: 1,000-file git repository, concurrency 1, EndTurn COMPLETED before each warm
 * BeginTurn, a Health/Check before it) with each call split into request written → response
 * headers → last byte → trailers/close, and the decode of the response timed alone. Beside it,
 * from this process: a PostgreSQL round trip (`SELECT 1`), the session check's statement, and an
 * autocommit INSERT with its WAL flush, on the scenario's own database. BENCH_BERTH_ROOT runs a
 * snapshot's server. (The server's own stages were taken with temporary timestamps, not kept.)
 * Usage: npx tsx bench/tools/begin-turn-stages.ts [warm samples, default 60]
 */
import http2 from "node:http2";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import pg from "pg";
import { createBenchDatabase } from "../lib/database.js";
import { CREATE_WORKSPACE, SERVICE } from "../lib/fixtures.js";
import { grpcFrame, grpcUnframe } from "../lib/frame.js";
import { makeGitRepo } from "../lib/repos.js";
import { RpcClient } from "../lib/rpc.js";
import { HEALTH_CHECK, startBerth } from "../lib/servers.js";
import { HealthCheckRequestSchema, HealthCheckResponseSchema } from "../../gen/grpc/health/v1/health_pb.js";
import { TurnOutcome, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { BeginTurnRequestSchema, BeginTurnResponseSchema, EndTurnRequestSchema, EndTurnResponseSchema } from "../../gen/berth/v1/turn_service_pb.js";
import { CreateWorkspaceRequestSchema, CreateWorkspaceResponseSchema, RegisterRepositoryRequestSchema, RegisterRepositoryResponseSchema } from "../../gen/berth/v1/workspace_service_pb.js";

const WARM = Number(process.argv[2] ?? 60);
const TURNS = "/berth.v1.TurnService";

interface Timed<T> {
  readonly value: T;
  /** ms from the request's start: headers, first data, last data, close; decode: ms of fromBinary. */
  readonly at: { headers: number; data: number; last: number; close: number; decode: number; total: number };
}

/** One gRPC unary call on `session`, timestamped (RpcClient's, with the events kept). */
function timedUnary<I extends DescMessage, O extends DescMessage>(session: http2.ClientHttp2Session, p: string, input: I, output: O, message: MessageInitShape<I>): Promise<Timed<MessageShape<O>>> {
  const body = grpcFrame(toBinary(input, create(input, message)));
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = session.request({ ":method": "POST", ":path": p, "content-type": "application/grpc", te: "trailers" });
    const at = { headers: 0, data: 0, last: 0, close: 0, decode: 0, total: 0 };
    const chunks: Buffer[] = [];
    let status: string | undefined;
    req.on("response", (h) => {
      at.headers = performance.now() - t0;
      if (h["grpc-status"] !== undefined) status = String(h["grpc-status"]);
    });
    req.on("trailers", (t) => (status = String(t["grpc-status"])));
    req.on("data", (c: Buffer) => {
      const now = performance.now() - t0;
      if (at.data === 0) at.data = now;
      at.last = now;
      chunks.push(c);
    });
    req.on("error", reject);
    req.on("close", () => {
      at.close = performance.now() - t0;
      if (status !== "0") return reject(new Error(`${p}: grpc-status ${status}`));
      const d0 = performance.now();
      const value = fromBinary(output, grpcUnframe(Buffer.concat(chunks)) ?? new Uint8Array());
      at.decode = performance.now() - d0;
      at.total = performance.now() - t0;
      resolve({ value, at });
    });
    req.end(body);
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.floor(s.length / 2)]!;
};
const q = (xs: number[], f: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(f * xs.length))]!;
const fmt = (xs: number[]) => `p50 ${median(xs).toFixed(3)}  p10 ${q(xs, 0.1).toFixed(3)}  p90 ${q(xs, 0.9).toFixed(3)}`;

const source = makeGitRepo(1_000);
const envRoot = mkdtempSync(path.join(tmpdir(), "berth-bench-envs-"));
const db = await createBenchDatabase();
// STAGES_PGLOG=1: PostgreSQL logs every statement of this database with its duration (its server log).
if (process.env.STAGES_PGLOG) await db.query(`ALTER DATABASE ${db.name} SET log_min_duration_statement = 0`);
const berth = await startBerth({ databaseUrl: db.url, env: { BERTH_ENV_ROOT: envRoot } });
const pgc = new pg.Client({ connectionString: db.url });
try {
  const c = new RpcClient(berth.grpcUrl);
  const repoId = (await c.unary(`${SERVICE}/RegisterRepository`, RegisterRepositoryRequestSchema, RegisterRepositoryResponseSchema, { name: `stages-${Date.now()}`, sourcePath: source })).repository!.id;
  const sessionId = (await c.unary(CREATE_WORKSPACE, CreateWorkspaceRequestSchema, CreateWorkspaceResponseSchema, { repoId, agentId: "bench-turns", agentName: "turns-1", mode: WorkspaceMode.PERSISTENT, baseCommit: "main" })).workspace!.sessionId;
  c.close();
  const session = http2.connect(berth.grpcUrl);
  session.on("error", () => {});
  const begin = () => timedUnary(session, `${TURNS}/BeginTurn`, BeginTurnRequestSchema, BeginTurnResponseSchema, { sessionId });
  const end = (turnId: string) => timedUnary(session, `${TURNS}/EndTurn`, EndTurnRequestSchema, EndTurnResponseSchema, { turnId, outcome: TurnOutcome.COMPLETED });
  const health = () => timedUnary(session, HEALTH_CHECK, HealthCheckRequestSchema, HealthCheckResponseSchema, {});
  // Warm-up (a cold turn and a few warm ones), not counted.
  for (let i = 0; i < 6; i++) await end((await begin()).value.turnId);
  const warm: Timed<MessageShape<typeof BeginTurnResponseSchema>>["at"][] = [];
  const hc: number[] = [];
  for (let i = 0; i < WARM; i++) {
    hc.push((await health()).at.total);
    const t = await begin();
    if (!t.value.warm) throw new Error("not warm");
    warm.push(t.at);
    await end(t.value.turnId);
  }
  session.close();
  // PostgreSQL from this process, on the same database (after the loop: not in its way).
  await pgc.connect();
  const rt = async (text: string, values: unknown[] = [], n = 200) => {
    const xs: number[] = [];
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await pgc.query({ text, values, name: `s${text.length}` });
      xs.push(performance.now() - t);
    }
    return xs;
  };
  const select1 = await rt("SELECT 1");
  const check = await rt(`SELECT w.session_id, w.id, w.lifecycle, w.base_commit, w.changeset_id, c.state AS cs_state, c.reason AS cs_reason,
    floor(extract(epoch FROM c.updated_at) * 1000)::float8 AS cs_updated_ms FROM workspaces w JOIN changesets c ON c.id = w.changeset_id WHERE w.session_id = any($1::uuid[])`, [[sessionId]]);
  await pgc.query("CREATE TABLE stage_probe (id serial PRIMARY KEY, v text)");
  const flush = await rt("INSERT INTO stage_probe (v) VALUES ($1)", ["x"]);
  console.log(`warm BeginTurn, client side (ms, n ${warm.length}):`);
  for (const k of ["headers", "data", "last", "close", "decode", "total"] as const) console.log(`  ${k.padEnd(8)} ${fmt(warm.map((w) => w[k]))}`);
  console.log(`Health/Check total  ${fmt(hc)}`);
  console.log(`pg from the client: SELECT 1 ${fmt(select1)}; live check ${fmt(check)}; INSERT autocommit ${fmt(flush)}`);
} finally {
  await pgc.end().catch(() => {});
  await berth.stop();
  await db.drop();
  rmSync(source, { recursive: true, force: true });
  rmSync(envRoot, { recursive: true, force: true });
}
