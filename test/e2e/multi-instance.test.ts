/**
 * Two servers on one PostgreSQL database: a change answered by one instance is seen by the
 * other, which holds the session live in its memory. The safety-net poll is set to 60 s, so
 * what crosses between them crosses by LISTEN/NOTIFY (docs/events.md).
 */
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import type { Event } from "../../gen/berth/v1/event_pb.js";
import { ChangesetState, LifecycleState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { failure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";
import { changesetStateEnum } from "../../src/platform/proto-enums.js";
import type { Clock } from "../../src/platform/clock.js";
import type { ChangesetStateName } from "../../src/platform/schema.js";

async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (ok(v) || Date.now() > until) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Only a notification can bring another instance's commit within the tests' bounds. */
const LONG_POLL = { BERTH_EVENT_POLL_MS: "60000" };

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

needs({ postgres: true })("two instances on one database", () => {
  let database: TestDatabase;
  let a: TestBerth;
  let b: TestBerth;
  beforeAll(async () => {
    database = await createTestDatabase("postgres");
    a = await startBerth({ database, env: LONG_POLL });
    const second = await database.reopen();
    b = await startBerth({ database: { ...database, opened: second }, env: LONG_POLL });
  });
  afterAll(async () => {
    await b?.stop();
    await a?.stop();
    await database?.drop();
  });

  it("a session held live by one instance and stranded through the other answers SESSION_STRANDED on both", async () => {
    const { repository } = await a.grpc.registerRepository({ name: "shared" });
    const { workspace } = await a.grpc.createWorkspace({ repoId: repository!.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "x" });
    const sessionId = workspace!.sessionId;
    await b.grpc.strandSession({ sessionId, reason: "moved" });
    const seenByA = await eventually(
      () => failure(a.grpc.heartbeat({ sessionId })).catch(() => undefined),
      (f) => f?.reason === "SESSION_STRANDED",
    );
    expect(seenByA).toMatchObject({ code: "FAILED_PRECONDITION", reason: "SESSION_STRANDED" });
    expect((await a.grpc.getWorkspace({ sessionId })).workspace?.lifecycleState).toBe(LifecycleState.STRANDED);
  });

  it("a changeset moved through one instance shows its new state on the other", async () => {
    const { repository } = await a.grpc.registerRepository({ name: "shared-cs" });
    const { workspace } = await a.grpc.createWorkspace({ repoId: repository!.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "x" });
    await b.grpc.transitionChangeset({ changesetId: workspace!.changesetId, toState: ChangesetState.SUBMITTED });
    const got = await eventually(
      () => a.grpc.getWorkspace({ sessionId: workspace!.sessionId }),
      (r) => r.workspace?.changesetState === ChangesetState.SUBMITTED,
    );
    expect(got.workspace?.changesetState).toBe(ChangesetState.SUBMITTED);
  });

  it("WatchEvents on one instance streams what RPCs on the other commit, each within 1 s (p50/p99 over 100)", async () => {
    const { repository } = await a.grpc.registerRepository({ name: "shared-watch" });
    const ac = new AbortController();
    const stream = b.grpc.watchEvents({ repoIds: [repository!.id], kinds: ["session.created"] }, { signal: ac.signal })[Symbol.asyncIterator]();
    const next = async (what: string): Promise<Event> => {
      let timer: NodeJS.Timeout | undefined;
      try {
        const r = await Promise.race([
          stream.next(),
          new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not delivered within 1 s`)), 1000))),
        ]);
        if (r.done) throw new Error("the stream ended");
        return r.value.event!;
      } finally {
        clearTimeout(timer);
      }
    };
    const create = () => a.grpc.createWorkspace({ repoId: repository!.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "x" });
    // The first one also proves the stream is live before anything is measured.
    await create();
    const seqs = [(await next("the first workspace")).seq];
    const latencies: number[] = [];
    for (let i = 0; i < 100; i++) {
      const { workspace } = await create();
      const answered = performance.now();
      const e = await next(`workspace ${i}`);
      latencies.push(performance.now() - answered);
      expect(e.sessionId).toBe(workspace!.sessionId);
      seqs.push(e.seq);
    }
    ac.abort();
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]! > seqs[i - 1]!).toBe(true);
    const sorted = [...latencies].sort((x, y) => x - y);
    console.log(
      `[measure] CreateWorkspace answered by A → WatchEvents on B, poll 60 s, 100 events: ` +
        `p50 ${percentile(sorted, 50).toFixed(2)} ms, p99 ${percentile(sorted, 99).toFixed(2)} ms, max ${sorted.at(-1)!.toFixed(2)} ms`,
    );
  });
});

needs({ postgres: true })("two instances whose clocks disagree", () => {
  let database: TestDatabase;
  let a: TestBerth;
  let b: TestBerth;
  /** Three hours behind: what each instance stamps a transition with is no order between them. */
  const behind: Clock = { now: () => Date.now() - 3 * 3600_000 };
  beforeAll(async () => {
    database = await createTestDatabase("postgres");
    // One instance each (whatever BERTH_TEST_INSTANCES says): the test is about these two and their clocks.
    a = await startBerth({ database, instances: 1 });
    const second = await database.reopen();
    b = await startBerth({ database: { ...database, opened: second }, clock: behind, instances: 1 });
  });
  afterAll(async () => {
    await b?.stop();
    await a?.stop();
    await database?.drop();
  });

  it("shows every changeset transition, made alternately through either instance, as the database has it, on both", async () => {
    const { repository } = await a.grpc.registerRepository({ name: "skewed" });
    // A session held live by each instance, both on one changeset: each instance caches it.
    const onA = (await a.grpc.createWorkspace({ repoId: repository!.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "x" })).workspace!;
    const changesetId = onA.changesetId;
    const onB = (await b.grpc.createWorkspace({ repoId: repository!.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "x", changesetId })).workspace!;
    expect(a.server.registry.liveWorkspace(onA.sessionId)).toBeDefined();
    expect(b.server.registry.liveWorkspace(onB.sessionId)).toBeDefined();
    const inDatabase = async () =>
      (await sql<{ state: ChangesetStateName }>`SELECT state FROM changesets WHERE id = ${changesetId}::uuid`.execute(database.opened.db)).rows[0]!.state;
    const steps: [TestBerth, ChangesetState][] = [
      [a, ChangesetState.SUBMITTED],
      [b, ChangesetState.VERIFYING],
      [a, ChangesetState.APPROVED],
      [b, ChangesetState.CLOSED],
    ];
    for (const [through, toState] of steps) {
      await through.grpc.transitionChangeset({ changesetId, toState });
      const state = changesetStateEnum(await inDatabase());
      expect(state).toBe(toState);
      // Each instance's cached changeset follows the transition's event, whichever clock stamped it.
      await vi.waitFor(() => {
        expect([a.server.registry.liveWorkspace(onA.sessionId)?.changeset.state, b.server.registry.liveWorkspace(onB.sessionId)?.changeset.state].map((s) => s && changesetStateEnum(s))).toEqual([state, state]);
      }, { timeout: 10_000, interval: 20 });
      // And every instance answers it for every session.
      const shown = [];
      for (const server of [a, b]) for (const ws of [onA, onB]) shown.push((await server.grpc.getWorkspace({ sessionId: ws.sessionId })).workspace?.changesetState);
      expect(shown).toEqual([state, state, state, state]);
    }
  });

  it("reports another session's file on both instances exactly while its changeset, moved through the instance whose clock is behind, is not terminal", async () => {
    const { repository } = await a.grpc.registerRepository({ name: "skewed-modifiers" });
    const repoId = repository!.id;
    const path = "src/touched.ts";
    const writer = (await a.grpc.createWorkspace({ repoId, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "writer" })).workspace!;
    // Written through A: A's index holds the changeset's state as A's clock stamped it.
    await a.grpc.writeFile({ sessionId: writer.sessionId, path, content: new TextEncoder().encode("export const touched = 1;\n") });
    const shownBy = async (server: TestBerth) => (await server.grpc.describeOtherModifiers({ repoId, path })).modifiers.map((m) => [m.sessionId, m.changesetState]);
    for (const server of [a, b]) expect(await shownBy(server)).toEqual([[writer.sessionId, ChangesetState.DRAFT]]);
    for (const toState of [ChangesetState.SUBMITTED, ChangesetState.VERIFYING]) {
      await b.grpc.transitionChangeset({ changesetId: writer.changesetId, toState });
      for (const server of [a, b]) expect(await shownBy(server)).toEqual([[writer.sessionId, toState]]);
    }
    // CLOSED through B, stamped three hours before what A holds: the file is no one's pending work any more.
    await b.grpc.transitionChangeset({ changesetId: writer.changesetId, toState: ChangesetState.CLOSED });
    for (const server of [a, b]) expect(await shownBy(server)).toEqual([]);
  });
});

