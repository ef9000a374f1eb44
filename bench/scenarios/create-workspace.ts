/**
 * (4) CreateWorkspace (durable: changeset, workspace and its session.created event row, committed
 * before the answer) vs raw `pg` INSERT transactions of a 13-column row (BEGIN; INSERT; COMMIT)
 * at the same concurrency on the same database, from the load-generator workers with a pg Pool
 * of the same size as Berth's (16 connections). Two rows: every create in one repository (one
 * agent counter), and spread over 32 repositories.
 */
import { describeLoad, runLoad } from "../loadgen/index.js";
import { frame } from "../lib/bodies.js";
import { createBenchDatabase, RAW_INSERT_BASELINE } from "../lib/database.js";
import { CREATE_WORKSPACE, createWorkspaceInit, registerRepository } from "../lib/fixtures.js";
import { RpcClient } from "../lib/rpc.js";
import { round, sideBySide, type Scenario } from "../lib/scenario.js";
import { startBerth } from "../lib/servers.js";
import { CreateWorkspaceRequestSchema } from "../../gen/berth/v1/workspace_service_pb.js";

/** Berth's pool size (src/platform/database.ts, pg.Pool max 16): the baseline gets the same. */
const POOL = 16;
const REPOS = 32;

export const scenario: Scenario = {
  name: "create-workspace",
  title: "CreateWorkspace (durable, with its event row) vs raw pg INSERT transactions",
  async run(ctx) {
    const db = await createBenchDatabase();
    const berth = await startBerth({ databaseUrl: db.url, cpuProfDir: ctx.cpuProfDir });
    try {
      await db.query(RAW_INSERT_BASELINE.table);
      const client = new RpcClient(berth.grpcUrl);
      const repos: string[] = [];
      for (let i = 0; i < REPOS; i++) repos.push(await registerRepository(client, `bench-repo-${Date.now()}-${i}`));
      client.close();
      const oneRepo = Array.from({ length: 64 }, (_, i) => frame(CreateWorkspaceRequestSchema, createWorkspaceInit(repos[0]!, i)));
      const manyRepos = Array.from({ length: 64 }, (_, i) => frame(CreateWorkspaceRequestSchema, createWorkspaceInit(repos[i % repos.length]!, i)));
      const base = { concurrency: 64, warmupMs: ctx.warmupMs, durationMs: ctx.durationMs };
      const grpc = { ...base, kind: "grpc" as const, connections: 4, url: berth.grpcUrl, path: CREATE_WORKSPACE };
      const pg = { ...base, kind: "pg" as const, pgUrl: db.url, pgPoolMax: POOL };
      const s = await sideBySide(
        ctx,
        {
          pg: () => runLoad({ ...pg, pgStatements: [RAW_INSERT_BASELINE.insert] }),
          create: () => runLoad({ ...grpc, bodies: oneRepo }),
          [`create@${REPOS}repos`]: () => runLoad({ ...grpc, bodies: manyRepos }),
        },
        (l, r) => ctx.log(`${l.padEnd(14)} ${describeLoad(r)}`),
      );
      const many = `create@${REPOS}repos`;
      const baseline = { name: `pg BEGIN/INSERT(13 columns)/COMMIT, 64 in flight / pool ${POOL}`, value: s.throughput.pg!, unit: "tx/s" };
      const row = (figure: string, label: string, target: number) => {
        const ratio = s.ratio(label, "pg");
        return { figure, value: s.throughput[label]!, unit: "req/s", baseline, ratio: round(ratio), target: `ratio ≥ ${target}`, met: ratio >= target };
      };
      return {
        rows: [
          row("CreateWorkspace, 64 in flight / 4 conn, one repository", "create", 0.5),
          row(`CreateWorkspace, 64 in flight / 4 conn, over ${REPOS} repositories`, many, 0.6),
        ],
        commands: [berth.command, `load-generator pg Pool(max ${POOL}) on ${db.url}: BEGIN; ${RAW_INSERT_BASELINE.insert.replace(/\s+/g, " ")}; COMMIT`],
        runs: s.runs,
      };
    } finally {
      await berth.stop();
      await db.drop();
    }
  },
};
