/**
 * Latency of a local CreateWorkspace's event to an in-process hub subscriber: `n` creates one
 * after another through the registry, each timed from the call to its session.created reaching
 * a watch() of the hub (the hub nudged by the unit of work, as in the server; no gRPC). Prints
 * p50/p90/p99 of call → delivered and of create returned → delivered. With `beside`, the timed
 * writes are instead events stored with seq NULL (as BeginTurn's, numbered by a pass) while 32
 * loops of creates run beside them: what the batches' hold of the numbering lock costs the
 * other writers. BENCH_BERTH_ROOT measures a snapshot of Berth.
 * Usage: npx tsx bench/tools/commit-to-hub.ts [n=300] [beside] (n = 0 with beside: the creates alone, 5 s)
 */
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { createBenchDatabase } from "../lib/database.js";
import { berthModule } from "../lib/servers.js";
import pino from "pino";

const n = Number(process.argv[2] ?? 300);
const beside = process.argv[3] === "beside";
const { openDatabase } = await berthModule("src/platform/database.ts");
const { migrateToLatest } = await berthModule("src/platform/migrate.ts");
const { UnitOfWork } = await berthModule("src/platform/unit-of-work.ts");
const { WorkspaceRegistry } = await berthModule("src/sessions/registry.ts");
const { EventHub } = await berthModule("src/delivery/hub.ts");

const scratch = await createBenchDatabase();
const url = new URL(scratch.url);
const opened = await openDatabase({ url: scratch.url });
const pct = (xs: number[], p: number) => xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!.toFixed(2);
try {
  await migrateToLatest(opened.db);
  const silent = pino({ level: "silent" });
  const hub = new EventHub({ db: opened.db, logger: silent, listenUrl: url.toString(), pollIntervalMs: 60_000 });
  await hub.start();
  const uow = new UnitOfWork(opened.db, silent, (numbered: unknown) => hub.nudge(numbered));
  const registry = new WorkspaceRegistry({ uow, clock: { now: () => Date.now() }, logger: silent });
  await registry.load();
  const repo = await registry.registerRepository("lat", {});
  const arrived = new Map<string, number>();
  const waiters = new Map<string, () => void>();
  const stop = new AbortController();
  const reading = (async () => {
    for await (const e of hub.watch({}, stop.signal)) {
      if (e.kind !== "session.created") continue;
      arrived.set(e.sessionId, performance.now());
      waiters.get(e.sessionId)?.();
    }
  })().catch(() => {});
  const fromCall: number[] = [];
  const fromReturn: number[] = [];
  const createInput = (agentId: string) => ({ repoId: repo.id, intent: "", baseCommit: "main", mode: "ephemeral", ttlSeconds: undefined, agentId, agentName: undefined, sessionId: undefined, changesetId: undefined });
  let loading = beside;
  let loaded = 0;
  const load = Array.from({ length: beside ? 32 : 0 }, async (_, l) => {
    for (let i = 0; loading; i++) {
      await registry.createWorkspace(createInput(`load${l}-${i}`));
      loaded++;
    }
  });
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    let sessionId: string;
    if (beside) {
      sessionId = randomUUID();
      await uow.run(async ({ record }: { record: (e: unknown) => void }) => record({ kind: "session.created", repoId: repo.id, sessionId, occurredAt: Date.now(), reason: "" }));
    } else sessionId = (await registry.createWorkspace(createInput(`a${i}`))).sessionId;
    const t1 = performance.now();
    if (!arrived.has(sessionId)) await new Promise<void>((r) => waiters.set(sessionId, r));
    const t2 = arrived.get(sessionId)!;
    if (i >= 20) {
      fromCall.push(t2 - t0);
      fromReturn.push(t2 - t1);
    }
  }
  // n = 0: creates alone for 5 s (their rate, beside nothing).
  if (n === 0) await new Promise((r) => setTimeout(r, 5000));
  loading = false;
  await Promise.all(load);
  if (beside) console.log(`beside ${loaded} creates (${Math.round((loaded * 1000) / (performance.now() - started))}/s)`);
  if (n > 0) console.log(`${fromCall.length} ${beside ? "events stored for a pass" : "creates"}: call → delivered p50 ${pct(fromCall, 50)} p90 ${pct(fromCall, 90)} p99 ${pct(fromCall, 99)} ms; returned → delivered p50 ${pct(fromReturn, 50)} p90 ${pct(fromReturn, 90)} p99 ${pct(fromReturn, 99)} ms`);
  stop.abort();
  await hub.stop();
  await reading;
} finally {
  await opened.close();
  await scratch.drop();
}
