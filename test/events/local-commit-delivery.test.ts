/**
 * The event hub hands out a local commit that numbered its own events (a group-committed
 * CreateWorkspace batch) as committed, without reading it back, when everything before it has
 * been fanned out; when another writer's events come between, it reads, so that subscribers
 * still get every event once, in seq order, with the stored content.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sequencePending } from "../../src/delivery/sequencer.js";
import { EventHub } from "../../src/delivery/hub.js";
import { readEvents, type Event } from "../../src/delivery/event-store.js";
import { insertEvents, prepareEvent } from "../../src/platform/outbox.js";
import type { WorkspaceRegistry } from "../../src/sessions/registry.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../support/database.js";
import { input, registryOn, silent, until } from "./helpers.js";
import type { UnitOfWork } from "../../src/platform/unit-of-work.js";

describe.each(DATABASE_KINDS)("local numbered commits on %s", (kind) => {
  let database: TestDatabase;
  let hub: EventHub;
  let registry: WorkspaceRegistry;
  let received: Event[];
  let stop: AbortController;

  beforeEach(async () => {
    database = await createTestDatabase(kind);
    // No poll to speak of: the hub reads only when a commit or a notification asks it to.
    hub = new EventHub({ db: database.opened.db, logger: silent, pollIntervalMs: 600_000 });
    await hub.start();
    registry = registryOn(database.opened.db, (numbered) => hub.nudge(numbered));
    received = [];
    stop = new AbortController();
    const stream = hub.stream({ afterSeq: hub.headSeq, filter: {} }, stop.signal);
    void (async () => {
      for await (const e of stream) received.push(e);
    })().catch(() => {});
  }, 60_000);
  afterEach(async () => {
    stop.abort();
    await hub.stop();
    await database.drop();
  });

  /** The stored events, as a read of the outbox decodes them. */
  async function stored(): Promise<Event[]> {
    return (await readEvents(database.opened.db, 0n, 10_000)).map((s) => s.event);
  }

  it("fans a lone create's event out as committed, with its stored seq and content, without reading the outbox", async () => {
    const repo = await registry.registerRepository(`lone-${kind}`, {});
    const readsBefore = hub.reads;
    const ws = await registry.createWorkspace({ repoId: repo.id, intent: "lone", baseCommit: "main", mode: "ephemeral", ttlSeconds: undefined, agentId: "a", agentName: undefined, sessionId: undefined, changesetId: undefined });
    await until(() => received.length >= 1);
    expect(hub.reads).toBe(readsBefore);
    const [row] = (await stored()).filter((e) => e.sessionId === ws.sessionId);
    expect(row!.seq > 0n).toBe(true);
    expect(received).toEqual([row]);
    expect(hub.headSeq).toBe(row!.seq);
  });

  it("fans out the rows its own numbering pass numbered (a commit that left them unnumbered) without reading the outbox", async () => {
    const uow: UnitOfWork = registry.uow;
    const readsBefore = hub.reads;
    // A change of one transaction whose events go in unnumbered, as every writer's but a batch of creates.
    await uow.run(async ({ record }) => record(input("test.unnumbered"), input("test.unnumbered")));
    await until(() => received.length >= 2);
    const all = await stored();
    expect(received).toEqual(all);
    expect(hub.reads).toBe(readsBefore);
  });

  it("reads when another writer's events come between, and hands out every event once, in seq order", async () => {
    const repo = await registry.registerRepository(`between-${kind}`, {});
    const create = (i: number) => registry.createWorkspace({ repoId: repo.id, intent: `c${i}`, baseCommit: "main", mode: "ephemeral", ttlSeconds: undefined, agentId: `a${i}`, agentName: undefined, sessionId: undefined, changesetId: undefined });
    await create(0);
    // Another writer's event, numbered by a pass the hub is not told of: the next create does not follow the hub's position.
    await insertEvents([prepareEvent(input("test.between", repo.id)).row]).execute(database.opened.db);
    await sequencePending(database.opened.db);
    const readsBefore = hub.reads;
    await create(1);
    await Promise.all(Array.from({ length: 20 }, (_, i) => create(i + 2)));
    const all = await stored();
    await until(() => received.length >= all.length);
    expect(hub.reads).toBeGreaterThan(readsBefore);
    expect(received.map((e) => e.seq)).toEqual(all.map((e) => e.seq));
    expect(received).toEqual(all);
  });
});
