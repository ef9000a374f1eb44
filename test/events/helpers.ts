/** Shared pieces of the event tests: a registry on a test database, direct event writes, a nats-server. */
import { sequencePending } from "../../src/delivery/sequencer.js";
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import pino from "pino";
import { systemClock, type Clock } from "../../src/platform/clock.js";
import type { EventInput, NumberedCommit } from "../../src/platform/outbox.js";
import { WorkspaceRegistry } from "../../src/sessions/registry.js";
import { UnitOfWork } from "../../src/platform/unit-of-work.js";
import type { Db } from "../../src/platform/database.js";
import { toSeq } from "../../src/platform/schema.js";
import { NATS_SERVER } from "../support/services.js";

export const silent = pino({ level: "silent" });

export function registryOn(db: Db, onEventsCommitted?: (numbered: NumberedCommit | undefined) => void, clock: Clock = systemClock): WorkspaceRegistry {
  return new WorkspaceRegistry({ uow: new UnitOfWork(db, silent, onEventsCommitted), clock, logger: silent });
}

export const REPO_A = "00000000-0000-4000-8000-00000000000a";
export const REPO_B = "00000000-0000-4000-8000-00000000000b";

export function input(kind: string, repoId = REPO_A, extra: Partial<EventInput> = {}): EventInput {
  return { kind, repoId, sessionId: randomUUID(), occurredAt: Date.now(), reason: "test", ...extra };
}

/** Stores events in one transaction through the unit of work (outbox, nudge). */
export function writeEvents(registry: WorkspaceRegistry, inputs: readonly EventInput[]): Promise<void> {
  return registry.uow.run(async ({ record }) => record(...inputs));
}

export async function storedSeqs(db: Db): Promise<bigint[]> {
  await sequencePending(db);
  const rows = await db.selectFrom("events").select("seq").where("seq", "is not", null).orderBy("seq").execute();
  return rows.map((r) => toSeq(r.seq!));
}

export async function storedIds(db: Db): Promise<string[]> {
  await sequencePending(db);
  const rows = await db.selectFrom("events").select("id").where("seq", "is not", null).orderBy("seq").execute();
  return rows.map((r) => r.id);
}

export async function until(cond: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = "condition"): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = net.connect({ host: "127.0.0.1", port });
    c.once("connect", () => {
      c.destroy();
      resolve(true);
    });
    c.once("error", () => resolve(false));
  });
}

export { NATS_SERVER } from "../support/services.js";

/** A nats-server with JetStream on a free port and its own store; stop() and start() keep both. */
export class NatsServer {
  private proc: ChildProcess | undefined;
  readonly storeDir = mkdtempSync(path.join(tmpdir(), "berth-nats-"));
  private constructor(readonly port: number) {}

  static async launch(): Promise<NatsServer> {
    const s = new NatsServer(await freePort());
    await s.start();
    return s;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.proc = spawn(NATS_SERVER, ["-a", "127.0.0.1", "-p", String(this.port), "-js", "-sd", this.storeDir], { stdio: "ignore" });
    await until(() => portOpen(this.port), 10_000, "nats-server to listen");
  }

  async stop(): Promise<void> {
    const p = this.proc;
    this.proc = undefined;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((r) => p.once("exit", r));
    p.kill("SIGTERM");
    await exited;
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.storeDir, { recursive: true, force: true });
  }
}
