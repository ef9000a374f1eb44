/**
 * (4) CreateWorkspace (durable: changeset, workspace and its session.created event row in one
 * transaction) vs raw `pg` single-row INSERT transactions (BEGIN; INSERT; COMMIT) at the same
 * concurrency on the same database, from the load-generator workers with a pg Pool of the
 * same size as Berth's (16 connections).
 *
 * Two diagnostic runs say what bounds CreateWorkspace: the same RPC spread over 16 repositories
 * (no contention on one repository row's agent counter), and the pg baseline with the outbox's
 * global advisory lock taken before its INSERT and held to COMMIT (src/platform/outbox.ts).
 */
import { describeLoad, runLoad } from "../loadgen/index.js";
import { frame } from "../lib/bodies.js";
import { createBenchDatabase } from "../lib/database.js";
import { CREATE_WORKSPACE, createWorkspaceInit, registerRepository } from "../lib/fixtures.js";
import { RpcClient } from "../lib/rpc.js";
import { round, sideBySide, type Scenario } from "../lib/scenario.js";
import { startBerth } from "../lib/servers.js";
import { CreateWorkspaceRequestSchema } from "../../gen/berth/v1/workspace_service_pb.js";
import { SEQUENCER_LOCK_KEY } from "../../src/delivery/sequencer.js";

/** Berth's pool size (src/platform/database.ts, pg.Pool max 16): the baseline gets the same. */
const POOL = 16;
const INSERT = "INSERT INTO bench_insert (id, session_id, payload) VALUES ($1, $2, $3)";
/** A global lock held to COMMIT (the outbox's first design), with a key of its own so the diagnostic does not block Berth. */
const LOCK = `SELECT pg_advisory_xact_lock(${(SEQUENCER_LOCK_KEY - 1n).toString()}::bigint)`;

export const scenario: Scenario = {
  name: "create-workspace",
  title: "CreateWorkspace (durable, with its event row) vs raw pg INSERT transactions",
  async run(ctx) {
    const db = await createBenchDatabase();
    const berth = await startBerth({ databaseUrl: db.url, cpuProfDir: ctx.cpuProfDir });
    try {
      await db.query("CREATE TABLE bench_insert (id uuid PRIMARY KEY, session_id uuid NOT NULL UNIQUE, payload text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())");
      const client = new RpcClient(berth.grpcUrl);
      const repos: string[] = [];
      for (let i = 0; i < 16; i++) repos.push(await registerRepository(client, `bench-repo-${Date.now()}-${i}`));
      client.close();
      const oneRepo = Array.from({ length: 64 }, (_, i) => frame(CreateWorkspaceRequestSchema, createWorkspaceInit(repos[0]!, i)));
      const manyRepos = Array.from({ length: 64 }, (_, i) => frame(CreateWorkspaceRequestSchema, createWorkspaceInit(repos[i % repos.length]!, i)));
      const base = { concurrency: 64, warmupMs: ctx.warmupMs, durationMs: ctx.durationMs };
      const grpc = { ...base, kind: "grpc" as const, connections: 4, url: berth.grpcUrl, path: CREATE_WORKSPACE };
      const pg = { ...base, kind: "pg" as const, pgUrl: db.url, pgPoolMax: POOL };
      const s = await sideBySide(
        ctx,
        {
          pg: () => runLoad({ ...pg, pgStatements: [INSERT] }),
          create: () => runLoad({ ...grpc, bodies: oneRepo }),
          "create@16repos": () => runLoad({ ...grpc, bodies: manyRepos }),
          "pg+lock": () => runLoad({ ...pg, pgStatements: [LOCK, INSERT] }),
        },
        (l, r) => ctx.log(`${l.padEnd(14)} ${describeLoad(r)}`),
      );
      const ratio = s.ratio("create", "pg");
      const rate = (l: string) => `${Math.round(s.throughput[l]!)}/s`;
      return {
        rows: [
          {
            figure: "CreateWorkspace, 64 in flight / 4 conn, one repository",
            value: s.throughput.create!,
            unit: "req/s",
            baseline: { name: `pg BEGIN/INSERT/COMMIT, 64 in flight / pool ${POOL}`, value: s.throughput.pg!, unit: "tx/s" },
            ratio: round(ratio),
            target: "ratio ≥ 0.5",
            met: ratio >= 0.5,
            note: `diagnostics, same rounds: CreateWorkspace over 16 repositories ${rate("create@16repos")} (ratio ${round(s.ratio("create@16repos", "pg"))}); pg INSERT with a global advisory lock held to COMMIT ${rate("pg+lock")} (ratio ${round(s.ratio("pg+lock", "pg"))})`,
          },
        ],
        commands: [berth.command, `load-generator pg Pool(max ${POOL}) on ${db.url}: BEGIN; ${INSERT}; COMMIT  (pg+lock: BEGIN; ${LOCK}; INSERT ...; COMMIT)`],
        runs: s.runs,
      };
    } finally {
      await berth.stop();
      await db.drop();
    }
  },
};
