/**
 * WriteFile latency through gRPC on a 4 KiB TypeScript file: N sequential writes, each changing
 * one function (so every call parses, diffs, claims and stores). Real server, real PostgreSQL.
 *
 *   npx tsx test/overlay/write-latency.ts [N=500]
 */
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth } from "../../test/support/berth.js";
import { gitRepo } from "../../test/overlay/helpers.js";

const N = Number(process.argv[2] ?? 500);
const FUNCS = 64;
const file = (k: number, v: number) =>
  Array.from({ length: FUNCS }, (_, i) => `export function fn${i}(x: number): number {\n  return x * ${i === k ? v : i} + 1;\n}\n`).join("\n");

const berth = await startBerth({ env: { BERTH_LOG_LEVEL: "silent" } });
try {
  const src = gitRepo();
  const repoId = (await berth.grpc.registerRepository({ name: "latency", sourcePath: src.dir })).repository!.id;
  const { workspace } = await berth.grpc.createWorkspace({ repoId, mode: WorkspaceMode.EPHEMERAL, agentId: "bench", agentName: "bench" });
  const enc = new TextEncoder();
  console.log(`file size: ${enc.encode(file(0, 1000)).byteLength} bytes, ${FUNCS} functions`);
  for (let i = 0; i < 20; i++) await berth.grpc.writeFile({ sessionId: workspace!.sessionId, path: "src/big.ts", content: enc.encode(file(i % FUNCS, 5000 + i)) });
  const times: number[] = [];
  for (let i = 0; i < N; i++) {
    const content = enc.encode(file(i % FUNCS, 10_000 + i));
    const t0 = performance.now();
    await berth.grpc.writeFile({ sessionId: workspace!.sessionId, path: "src/big.ts", content });
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const q = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))]!.toFixed(2);
  console.log(`WriteFile x${N} (${berth.database.kind}): p50 ${q(0.5)} ms, p90 ${q(0.9)} ms, p99 ${q(0.99)} ms, max ${times[times.length - 1]!.toFixed(2)} ms`);
} catch (err) {
  console.error(berth.logs.filter((l) => Number(l.level) >= 50));
  throw err;
} finally {
  await berth.close();
}
