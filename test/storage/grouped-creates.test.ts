/**
 * CreateWorkspace's group commit (sessions/workspace-creation.ts): concurrent auto-named creates
 * are numbered together and inserted in one transaction, on both databases, and on two instances
 * of one database.
 */
import { sql } from "kysely";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sequencePending } from "../../src/delivery/sequencer.js";
import { readEvents } from "../../src/delivery/event-store.js";
import { ManualClock } from "../../src/platform/clock.js";
import type { OpenedDatabase } from "../../src/platform/database.js";
import { BerthError } from "../../src/platform/errors.js";
import { UnitOfWork } from "../../src/platform/unit-of-work.js";
import { WorkspaceRegistry, type CreateWorkspaceInput } from "../../src/sessions/registry.js";
import type { Repository, Workspace } from "../../src/sessions/workspace.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../support/database.js";
import { needs } from "../support/services.js";

const silent = pino({ level: "silent" });
const clock = new ManualClock();

function input(repoId: string, agentId: string, extra: Partial<CreateWorkspaceInput> = {}): CreateWorkspaceInput {
  return { repoId, intent: "", baseCommit: "main", mode: "ephemeral", ttlSeconds: undefined, agentId, agentName: undefined, sessionId: undefined, changesetId: undefined, ...extra };
}

function numbers(workspaces: readonly Workspace[]): number[] {
  return workspaces.map((w) => Number(/^agent-(\d+)$/.exec(w.agentName)![1])).sort((a, b) => a - b);
}

function oneTo(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i + 1);
}

async function registryOn(opened: OpenedDatabase): Promise<WorkspaceRegistry> {
  const registry = new WorkspaceRegistry({ uow: new UnitOfWork(opened.db, silent), clock, logger: silent });
  await registry.load();
  return registry;
}

describe.each(DATABASE_KINDS)("grouped creates on %s", (kind) => {
  let database: TestDatabase;
  let registry: WorkspaceRegistry;

  beforeAll(async () => {
    database = await createTestDatabase(kind);
    registry = await registryOn(database.opened);
  }, 60_000);
  afterAll(async () => {
    await database?.drop();
  });

  /** How many transactions wrote the repository's workspaces (rows of one transaction share xmin). */
  async function transactionsOf(repoId: string): Promise<number> {
    const r = await sql<{ n: string }>`SELECT count(DISTINCT xmin::text) AS n FROM workspaces WHERE repo_id = ${repoId}::uuid`.execute(database.opened.db);
    return Number(r.rows[0]!.n);
  }

  it("commits concurrent creates of one repository together, with distinct contiguous names that keep increasing", async () => {
    const repo = await registry.registerRepository(`batch-${kind}`, {});
    const first = await Promise.all(Array.from({ length: 40 }, (_, i) => registry.createWorkspace(input(repo.id, `a${i}`))));
    expect(numbers(first)).toEqual(oneTo(40));
    expect(await transactionsOf(repo.id)).toBeLessThan(40);

    const later: Workspace[] = [];
    for (let i = 0; i < 3; i++) later.push(await registry.createWorkspace(input(repo.id, `b${i}`)));
    expect(later.map((w) => w.agentName)).toEqual(["agent-41", "agent-42", "agent-43"]);
  });

  it("commits concurrent creates named by their callers together too, with the names asked for and no agent number taken", async () => {
    const repo = await registry.registerRepository(`named-${kind}`, {});
    const named = await Promise.all(Array.from({ length: 40 }, (_, i) => registry.createWorkspace(input(repo.id, `n${i}`, { agentName: `worker-${i}` }))));
    expect(named.map((w) => w.agentName)).toEqual(Array.from({ length: 40 }, (_, i) => `worker-${i}`));
    expect(await transactionsOf(repo.id)).toBeLessThan(40);
    // The counter was not touched: Berth's own names start at agent-1.
    expect((await registry.createWorkspace(input(repo.id, "auto"))).agentName).toBe("agent-1");
  });

  it("stores each create's session.created with the name its batch gave it", async () => {
    const repo = await registry.registerRepository(`batch-events-${kind}`, {});
    const created = await Promise.all(Array.from({ length: 12 }, (_, i) => registry.createWorkspace(input(repo.id, `e${i}`, { intent: `intent ${i}` }))));
    await sequencePending(database.opened.db);
    const events = (await readEvents(database.opened.db, 0n, 100_000)).filter((e) => e.event.repoId === repo.id);
    expect(events).toHaveLength(12);
    for (const ws of created) {
      const e = events.find((x) => x.event.sessionId === ws.sessionId)!.event;
      expect(e).toMatchObject({ kind: "session.created", workspaceId: ws.workspaceId, agentId: ws.agentId, changesetId: ws.changeset.id });
      expect(e.payload).toEqual({ case: "sessionCreated", value: expect.objectContaining({ agentName: ws.agentName, intent: ws.intent, baseCommit: "main" }) });
    }
  });

  it("fails only the create at fault in a batch: the others are written, with names never given before", async () => {
    const repo = await registry.registerRepository(`batch-fault-${kind}`, {});
    const taken = await registry.createWorkspace(input(repo.id, "first"));
    expect(taken.agentName).toBe("agent-1");

    const outcomes = await Promise.allSettled([
      ...Array.from({ length: 5 }, (_, i) => registry.createWorkspace(input(repo.id, `x${i}`))),
      registry.createWorkspace(input(repo.id, "dup", { sessionId: taken.sessionId })),
      ...Array.from({ length: 5 }, (_, i) => registry.createWorkspace(input(repo.id, `y${i}`))),
    ]);
    const failed = outcomes.filter((o) => o.status === "rejected");
    expect(failed).toHaveLength(1);
    expect((failed[0] as PromiseRejectedResult).reason).toBeInstanceOf(BerthError);
    expect(((failed[0] as PromiseRejectedResult).reason as BerthError).reason).toBe("SESSION_EXISTS");
    const written = outcomes.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []));
    expect(written).toHaveLength(10);
    // The numbers the failed batch took stay taken (docs/decisions.md): distinct, after agent-1.
    expect(new Set(written.map((w) => w.agentName)).size).toBe(10);
    expect(numbers(written)[0]).toBeGreaterThan(1);
    const next = await registry.createWorkspace(input(repo.id, "after"));
    expect(numbers([next])[0]).toBeGreaterThan(numbers(written)[9]!);

    const db = database.opened.db;
    expect(await db.selectFrom("workspaces").select("id").where("repo_id", "=", repo.id).execute()).toHaveLength(12);
    expect(await db.selectFrom("changesets").select("id").where("repo_id", "=", repo.id).execute()).toHaveLength(12);
    expect(await db.selectFrom("events").select("id").where("repo_id", "=", repo.id).execute()).toHaveLength(12);
  });
});

needs({ postgres: true })("grouped creates on two instances of one database", () => {
  let database: TestDatabase;
  let second: OpenedDatabase;
  let a: WorkspaceRegistry;
  let b: WorkspaceRegistry;

  beforeAll(async () => {
    database = await createTestDatabase("postgres");
    second = await database.reopen();
  }, 60_000);
  afterAll(async () => {
    await second?.close();
    await database?.drop();
  });

  it("never gives two workspaces one name, in one repository or in batches over several", async () => {
    a = await registryOn(database.opened);
    const repos: Repository[] = [];
    for (let i = 0; i < 3; i++) repos.push(await a.registerRepository(`two-${i}`, {}));
    b = await registryOn(second);

    // Instance a walks the repositories in one order and b in the other, so their batches span
    // the same repositories from both ends (their row locks are taken in id order: no deadlock).
    const created = await Promise.all([
      ...Array.from({ length: 60 }, (_, i) => a.createWorkspace(input(repos[i % 3]!.id, `a${i}`))),
      ...Array.from({ length: 60 }, (_, i) => b.createWorkspace(input(repos[2 - (i % 3)]!.id, `b${i}`))),
    ]);
    for (const repo of repos) expect(numbers(created.filter((w) => w.repoId === repo.id))).toEqual(oneTo(40));
  });
});
