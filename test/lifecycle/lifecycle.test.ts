/**
 * The session lifecycle at the domain level (WorkspaceRegistry + LifecycleManager) on real
 * databases: every kind this machine has (PostgreSQL and PGlite). Time is a ManualClock.
 */
import { sql } from "kysely";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { ManualClock } from "../../src/platform/clock.js";
import { createTestDatabase, DATABASE_KINDS, PRIMARY_KIND, type TestDatabase } from "../support/database.js";
import { eventsOf, failure, harness, setChangesetState, workspaceRow, type Harness } from "./helpers.js";
import type { ChangesetStateName } from "../../src/platform/schema.js";

const MIN = 60_000;
const STATES: ChangesetStateName[] = ["draft", "submitted", "verifying", "approved", "rejected", "merged", "closed"];
const TERMINAL = new Set<ChangesetStateName>(["rejected", "merged", "closed"]);

describe(`GC truth table (pinning × changeset state × reason) on ${PRIMARY_KIND}`, () => {
    let database: TestDatabase;
    let h: Harness;
    beforeAll(async () => {
      database = await createTestDatabase(PRIMARY_KIND);
      h = await harness(database.opened.db);
    });
    afterAll(async () => {
      await h.lifecycle.stop();
      await database.drop();
    });

    type Reason = "idle" | "max" | "disconnected" | "expired";
    const cases: { reason: Reason; pin: boolean; state: ChangesetStateName }[] = [];
    for (const reason of ["idle", "max", "disconnected", "expired"] as const)
      for (const pin of [true, false]) for (const state of STATES) cases.push({ reason, pin, state });

    /** The expected outcome: the reference's table, with DRAFT non-terminal. */
    function expected(reason: Reason, pin: boolean, state: ChangesetStateName): { lifecycle: string; cause?: string } {
      // Unfinished work is never destroyed: pinning on keeps (idle, max) or strands it; pinning off strands it (issue 14).
      const unfinished = !TERMINAL.has(state);
      if (reason === "idle" || reason === "max") {
        const cause = reason === "idle" ? "gc_idle" : "gc_max_lifetime";
        if (!unfinished) return { lifecycle: "destroyed", cause };
        return pin ? { lifecycle: "active" } : { lifecycle: "stranded", cause };
      }
      if (reason === "expired") return unfinished ? { lifecycle: "stranded", cause: "expired" } : { lifecycle: "destroyed", cause: "gc_expired" };
      return unfinished ? { lifecycle: "stranded", cause: "disconnected" } : { lifecycle: "destroyed", cause: "disconnected" };
    }

    it.each(cases)("$reason, pinning $pin, $state", async ({ reason, pin, state }) => {
      const g = await harness(database.opened.db, { settings: { pinNonTerminal: pin }, clock: new ManualClock(), repoId: h.repoId, startup: false });
      const mode = reason === "disconnected" ? "ephemeral" : "persistent";
      const ws = await g.create({ mode, ttlSeconds: mode === "ephemeral" ? undefined : reason === "expired" ? 60 : 30 * 86_400 });
      await setChangesetState(g.db, ws.changeset.id, state);
      if (reason === "idle") {
        g.clock.advance(3601 * 1000);
      } else if (reason === "max") {
        // Active all along (heartbeats), but alive beyond max TTL.
        for (let t = 0; t < 25; t++) {
          g.clock.advance(3600 * 1000);
          g.registry.touch(ws);
        }
      } else if (reason === "disconnected") {
        g.clock.advance(31_000);
      } else {
        g.clock.advance(61_000);
        g.registry.touch(ws);
      }
      await g.lifecycle.tick();
      const want = expected(reason, pin, state);
      const row = await workspaceRow(g.db, ws.workspaceId);
      expect(row.lifecycle).toBe(want.lifecycle);
      if (want.cause) expect(row.lifecycle_reason).toBe(want.cause);
      expect(g.registry.liveWorkspace(ws.sessionId) !== undefined).toBe(want.lifecycle === "active");
      await g.lifecycle.stop();
    });

});

describe(`lifecycle on ${PRIMARY_KIND}`, () => {
  let database: TestDatabase;
  let h: Harness;
  beforeEach(async () => {
    database = await createTestDatabase(PRIMARY_KIND);
    h = await harness(database.opened.db);
  });
  afterEach(async () => {
    await h.lifecycle.stop();
    await database.drop();
  });

  it("a failed pin lookup counts as pinned (nothing is evicted)", async () => {
      const ws = await h.create({ mode: "persistent" });
      await setChangesetState(h.db, ws.changeset.id, "merged");
      h.clock.advance(3601 * 1000);
      // The lookup selects from workspaces JOIN changesets: make it fail.
      await sql`ALTER TABLE changesets RENAME TO changesets_gone`.execute(h.db);
      try {
        const report = await h.lifecycle.tick();
        expect(report.pinned).toBe(1);
      } finally {
        await sql`ALTER TABLE changesets_gone RENAME TO changesets`.execute(h.db);
      }
      expect((await workspaceRow(h.db, ws.workspaceId)).lifecycle).toBe("active");
      expect(h.registry.liveWorkspace(ws.sessionId)).toBeDefined();
  });

  it("defect 1: idle GC measures inactivity, not time since creation; activity reaches the database batched", async () => {
    const ws = await h.create({ mode: "persistent" });
    await setChangesetState(h.db, ws.changeset.id, "closed"); // unpinned: idle GC may evict it
    h.clock.advance(50 * MIN);
    h.registry.touch(ws); // e.g. a GetWorkspace
    h.clock.advance(20 * MIN); // 70 min since creation, 20 min idle
    let report = await h.lifecycle.tick();
    expect(report.idle).toBe(0);
    expect(report.flushed).toBe(1);
    expect((await workspaceRow(h.db, ws.workspaceId)).last_active_at.getTime()).toBe(ws.lastActiveAt);
    h.clock.advance(41 * MIN); // 61 min idle
    report = await h.lifecycle.tick();
    expect(report.idle).toBe(1);
    const row = await workspaceRow(h.db, ws.workspaceId);
    expect(row).toMatchObject({ lifecycle: "destroyed", lifecycle_reason: "gc_idle" });
    expect((await eventsOf(h.db, ws.workspaceId)).map((e) => e.kind)).toEqual(["session.created", "session.expired"]);
  });

  it("flushes the activity of many sessions in batches", async () => {
    const list = [];
    for (let i = 0; i < 30; i++) list.push(await h.create({ mode: "persistent" }));
    h.clock.advance(5000);
    for (const ws of list) h.registry.touch(ws);
    expect(await h.lifecycle.flushActivity()).toBe(30);
    expect(await h.lifecycle.flushActivity()).toBe(0);
    for (const ws of list) expect((await workspaceRow(h.db, ws.workspaceId)).last_active_at.getTime()).toBe(h.clock.now());
  });

  describe("liveness", () => {
    it("a session created and then silent for the lease is disconnected: draft work is stranded", async () => {
      const ws = await h.create();
      h.clock.advance(29_000);
      expect((await h.lifecycle.tick()).disconnected).toBe(0);
      h.clock.advance(2_000);
      expect((await h.lifecycle.tick()).disconnected).toBe(1);
      expect(await workspaceRow(h.db, ws.workspaceId)).toMatchObject({ lifecycle: "stranded", lifecycle_reason: "disconnected" });
    });

    it("heartbeats keep a session connected; an open attach stream does too", async () => {
      const a = await h.create();
      const b = await h.create();
      const detach = h.registry.attach(b);
      for (let i = 0; i < 5; i++) {
        h.clock.advance(20_000);
        h.registry.touch(a);
        await h.lifecycle.tick();
      }
      expect(h.registry.liveWorkspace(a.sessionId)).toBeDefined();
      expect(h.registry.liveWorkspace(b.sessionId)).toBeDefined();
      detach();
      h.clock.advance(31_000);
      await h.lifecycle.tick();
      expect(h.registry.liveWorkspace(b.sessionId)).toBeUndefined();
      expect((await workspaceRow(h.db, b.workspaceId)).lifecycle).toBe("stranded");
    });

    it("the owner's GC reads the database's last activity before it strands: activity another instance served keeps the session", async () => {
      const ws = await h.create();
      const other = await harness(h.db, { clock: h.clock, repoId: h.repoId, instanceName: "other-host:50053" });
      try {
        // A Heartbeat served by the other instance: a copy read from the row, touched and flushed there.
        h.clock.advance(20_000);
        const copy = await other.registry.getWorkspace(ws.sessionId);
        expect(other.registry.liveWorkspace(ws.sessionId)).toBeUndefined();
        other.registry.touch(copy);
        expect(await other.lifecycle.flushActivity()).toBe(1);
        h.clock.advance(15_000); // 35 s since creation (the owner's memory), 15 s since the heartbeat
        expect((await h.lifecycle.tick()).disconnected).toBe(0);
        expect(h.registry.liveWorkspace(ws.sessionId)!.lastActiveAt).toBe(copy.lastActiveAt); // memory caught up
        h.clock.advance(16_000); // 31 s of silence everywhere
        expect((await h.lifecycle.tick()).disconnected).toBe(1);
        expect(await workspaceRow(h.db, ws.workspaceId)).toMatchObject({ lifecycle: "stranded", lifecycle_reason: "disconnected" });
      } finally {
        await other.lifecycle.stop();
      }
    });

    it("an AttachSession stream open on another instance renews the session at its every flush", async () => {
      const ws = await h.create();
      const other = await harness(h.db, { clock: h.clock, repoId: h.repoId, instanceName: "other-host:50054" });
      try {
        const detach = other.registry.attach(await other.registry.getWorkspace(ws.sessionId));
        for (let i = 0; i < 4; i++) {
          h.clock.advance(20_000);
          await other.lifecycle.flushActivity();
          expect((await workspaceRow(h.db, ws.workspaceId)).last_active_at.getTime()).toBe(h.clock.now());
          expect((await h.lifecycle.tick()).disconnected).toBe(0);
        }
        detach();
        h.clock.advance(20_000);
        expect(await other.lifecycle.flushActivity()).toBe(0); // closed: nothing renewed
        h.clock.advance(11_000);
        expect((await h.lifecycle.tick()).disconnected).toBe(1);
      } finally {
        await other.lifecycle.stop();
      }
    });

    it("an activity extender (a RUNNING turn) keeps its sessions connected: renewed at every flush", async () => {
      const ws = await h.create();
      const running = new Set([ws.workspaceId]);
      h.registry.addActivityExtender(() => running);
      for (let i = 0; i < 4; i++) {
        h.clock.advance(20_000);
        expect((await h.lifecycle.tick()).disconnected).toBe(0);
      }
      running.clear();
      h.clock.advance(31_000);
      expect((await h.lifecycle.tick()).disconnected).toBe(1);
    });

    it("a failed GC lookup strands nothing for disconnection (its activity elsewhere is unknown)", async () => {
      const ws = await h.create();
      h.clock.advance(31_000);
      await sql`ALTER TABLE changesets RENAME TO changesets_gone`.execute(h.db);
      try {
        expect((await h.lifecycle.tick()).disconnected).toBe(0);
      } finally {
        await sql`ALTER TABLE changesets_gone RENAME TO changesets`.execute(h.db);
      }
      expect((await workspaceRow(h.db, ws.workspaceId)).lifecycle).toBe("active");
      expect((await h.lifecycle.tick()).disconnected).toBe(1);
    });

    it("interned changesets go with their last live workspace; reading other sessions does not grow the cache", async () => {
      const a = await h.create();
      const shared = await h.registry.createWorkspace({ repoId: h.repoId, intent: "", baseCommit: "abc", mode: "ephemeral", ttlSeconds: undefined, agentId: "agent-a", agentName: undefined, sessionId: undefined, changesetId: a.changeset.id });
      const b = await h.create();
      expect(shared.changeset).toBe(a.changeset);
      expect(h.registry.internedChangesets).toBe(2);
      const other = await harness(h.db, { clock: h.clock, repoId: h.repoId, instanceName: "other-host:50055", startup: false });
      for (const w of [a, shared, b]) await other.registry.getWorkspace(w.sessionId);
      await other.registry.listSessions(h.repoId, ["active", "stranded"], undefined, 100);
      expect(other.registry.internedChangesets).toBe(0);
      await h.lifecycle.strand(a.sessionId, "explicit");
      expect(h.registry.internedChangesets).toBe(2);
      await h.lifecycle.strand(shared.sessionId, "explicit");
      expect(h.registry.internedChangesets).toBe(1);
      await h.registry.getWorkspace(a.sessionId); // a stranded session, read
      expect(h.registry.internedChangesets).toBe(1);
      const resumed = await h.lifecycle.resume(a.sessionId, "agent-a");
      expect(h.registry.internedChangesets).toBe(2);
      await h.lifecycle.abandon(resumed.sessionId, "explicit");
      await h.lifecycle.destroy(b.sessionId, "client");
      expect(h.registry.internedChangesets).toBe(0);
      expect(h.registry.liveCount).toBe(0);
    });

    it("a disconnected ephemeral session with a terminal changeset is destroyed", async () => {
      const ws = await h.create();
      await h.registry.transitionChangeset(ws.changeset.id, "closed", "done");
      h.clock.advance(31_000);
      await h.lifecycle.tick();
      expect(await workspaceRow(h.db, ws.workspaceId)).toMatchObject({ lifecycle: "destroyed", lifecycle_reason: "disconnected" });
    });
  });

  describe("strand", () => {
    it("defect 2: a stranded session answers SESSION_STRANDED with the facts, never NOT_FOUND; GetWorkspace reads it", async () => {
      const ws = await h.create();
      await h.lifecycle.strand(ws.sessionId, "explicit");
      const err = await failure(h.registry.requireActive(ws.sessionId));
      expect(err.kind).toBe("failed_precondition");
      expect(err.reason).toBe("SESSION_STRANDED");
      expect(err.metadata).toMatchObject({ changeset_id: ws.changeset.id, reason: "explicit" });
      expect(err.metadata.stranded_at).toBe(new Date(h.clock.now()).toISOString());
      expect((await h.registry.getWorkspace(ws.sessionId)).lifecycle).toBe("stranded");
      expect(h.registry.liveWorkspace(ws.sessionId)).toBeUndefined();
      const destroy = await failure(h.lifecycle.destroy(ws.sessionId, "client"));
      expect(destroy.reason).toBe("SESSION_STRANDED");
    });

    it("is idempotent: the first stranded_at is kept, one event", async () => {
      const ws = await h.create();
      await h.lifecycle.strand(ws.sessionId, "first");
      const first = h.clock.now();
      h.clock.advance(10_000);
      const again = await h.lifecycle.strand(ws.sessionId, "second");
      expect(again.strandedAt).toBe(first);
      expect(again.lifecycleReason).toBe("first");
      const row = await workspaceRow(h.db, ws.workspaceId);
      expect(row.stranded_at!.getTime()).toBe(first);
      expect((await eventsOf(h.db, ws.workspaceId)).filter((e) => e.kind === "session.stranded")).toHaveLength(1);
    });

    it("refuses abandoned and destroyed sessions", async () => {
      const a = await h.create();
      await h.lifecycle.abandon(a.sessionId, "explicit");
      expect((await failure(h.lifecycle.strand(a.sessionId, "x"))).reason).toBe("SESSION_ABANDONED");
      const d = await h.create();
      await h.lifecycle.destroy(d.sessionId, "client");
      expect((await failure(h.lifecycle.strand(d.sessionId, "x"))).reason).toBe("SESSION_DESTROYED");
    });
  });

  describe("resume", () => {
    it("defect 3: the resumed session is live at once; the workspace id is stable; old id redirects", async () => {
      const ws = await h.create();
      await h.lifecycle.strand(ws.sessionId, "explicit");
      const resumed = await h.lifecycle.resume(ws.sessionId, "agent-a");
      expect(resumed.workspaceId).toBe(ws.workspaceId);
      expect(resumed.sessionId).not.toBe(ws.sessionId);
      expect(resumed.resumedFrom).toBe(ws.sessionId);
      expect(h.registry.liveWorkspace(resumed.sessionId)).toBe(resumed);
      expect((await h.registry.requireActive(resumed.sessionId)).lifecycle).toBe("active");
      const old = await failure(h.registry.requireActive(ws.sessionId));
      expect(old.reason).toBe("SESSION_RESUMED");
      expect(old.metadata.new_session_id).toBe(resumed.sessionId);
      const row = await workspaceRow(h.db, ws.workspaceId);
      expect(row).toMatchObject({ lifecycle: "active", session_id: resumed.sessionId, stranded_at: null, owner_instance: h.instanceId });
      const events = await eventsOf(h.db, ws.workspaceId);
      expect(events.map((e) => e.kind)).toEqual(["session.created", "session.stranded", "session.resumed"]);
      // And the lifecycle goes on: it can be stranded and resumed again.
      await h.lifecycle.strand(resumed.sessionId, "again");
      const third = await h.lifecycle.resume(resumed.sessionId, "agent-a");
      expect(third.workspaceId).toBe(ws.workspaceId);
    });

    it("defect 4: a second resume gets ALREADY_RESUMED with the first one's id, never a new session", async () => {
      const ws = await h.create();
      await h.lifecycle.strand(ws.sessionId, "explicit");
      const won = await h.lifecycle.resume(ws.sessionId, "agent-a");
      const err = await failure(h.lifecycle.resume(ws.sessionId, "agent-a"));
      expect(err.kind).toBe("failed_precondition");
      expect(err.reason).toBe("ALREADY_RESUMED");
      expect(err.metadata.new_session_id).toBe(won.sessionId);
      const count = await sql<{ n: string }>`SELECT count(*) AS n FROM workspaces`.execute(h.db);
      expect(Number(count.rows[0]!.n)).toBe(1);
    });

    it("refuses: wrong agent (PERMISSION_DENIED), active, abandoned, terminal changeset, unknown", async () => {
      const ws = await h.create();
      expect((await failure(h.lifecycle.resume(ws.sessionId, "agent-a"))).reason).toBe("SESSION_NOT_STRANDED");
      await h.lifecycle.strand(ws.sessionId, "explicit");
      const wrong = await failure(h.lifecycle.resume(ws.sessionId, "agent-b"));
      expect([wrong.kind, wrong.reason]).toEqual(["permission_denied", "AGENT_MISMATCH"]);
      await setChangesetState(h.db, ws.changeset.id, "merged");
      expect((await failure(h.lifecycle.resume(ws.sessionId, "agent-a"))).reason).toBe("CHANGESET_TERMINAL");
      const ab = await h.create();
      await h.lifecycle.strand(ab.sessionId, "explicit");
      await h.lifecycle.abandon(ab.sessionId, "explicit");
      expect((await failure(h.lifecycle.resume(ab.sessionId, "agent-a"))).reason).toBe("SESSION_ABANDONED");
      const unknown = await failure(h.lifecycle.resume("00000000-0000-4000-8000-000000000000", "agent-a"));
      expect([unknown.kind, unknown.reason]).toEqual(["not_found", "SESSION_NOT_FOUND"]);
    });
  });

  describe("abandon", () => {
    it("rejects the changeset, tombstones the workspace, records the events; idempotent; active or stranded", async () => {
      const active = await h.create();
      const stranded = await h.create();
      await h.lifecycle.strand(stranded.sessionId, "explicit");
      for (const ws of [active, stranded]) {
        const out = await h.lifecycle.abandon(ws.sessionId, "explicit", "gave up");
        expect(out.lifecycle).toBe("abandoned");
        expect(out.changeset.state).toBe("rejected");
        expect(out.changeset.reason).toBe("session_abandoned:explicit");
        const again = await h.lifecycle.abandon(ws.sessionId, "explicit");
        expect(again.lifecycle).toBe("abandoned");
        const events = (await eventsOf(h.db, ws.workspaceId)).map((e) => e.kind);
        expect(events.filter((k) => k === "session.abandoned")).toHaveLength(1);
        const err = await failure(h.registry.requireActive(ws.sessionId));
        expect(err.reason).toBe("SESSION_ABANDONED");
      }
      const transitions = await sql<{ n: string }>`SELECT count(*) AS n FROM events WHERE kind = 'changeset.transitioned'`.execute(h.db);
      expect(Number(transitions.rows[0]!.n)).toBe(2);
    });

    it("sweep_stranded abandons stranded workspaces past the TTL (auto_ttl)", async () => {
      const old = await h.create();
      await h.lifecycle.strand(old.sessionId, "explicit");
      h.clock.advance(3 * 3600 * 1000);
      const young = await h.create();
      await h.lifecycle.strand(young.sessionId, "explicit");
      h.clock.advance(3600 * 1000 + 1000); // old: 4 h + 1 s stranded; young: 1 h
      const report = await h.lifecycle.tick();
      expect(report.abandoned).toBe(1);
      expect(await workspaceRow(h.db, old.workspaceId)).toMatchObject({ lifecycle: "abandoned", lifecycle_reason: "session_abandoned:auto_ttl" });
      expect((await workspaceRow(h.db, young.workspaceId)).lifecycle).toBe("stranded");
      const cs = await sql<{ state: string; reason: string }>`SELECT state, reason FROM changesets WHERE id = ${old.changeset.id}::uuid`.execute(h.db);
      expect(cs.rows[0]).toEqual({ state: "rejected", reason: "session_abandoned:auto_ttl" });
    });
  });

  it("a failing tick step logs and the tick (and the next one) goes on", async () => {
    const ws = await h.create();
    await h.lifecycle.strand(ws.sessionId, "explicit");
    h.clock.advance(5 * 3600 * 1000);
    const spy = vi.spyOn(h.registry, "liveWorkspaces").mockImplementationOnce(() => {
      throw new Error("boom");
    });
    const report = await h.lifecycle.tick();
    expect(report.errors).toBe(1);
    expect(report.abandoned).toBe(1); // the later step still ran
    expect(h.logs.some((l) => l.msg === "lifecycle GC step failed; continuing" && l.step === "gc_live")).toBe(true);
    spy.mockRestore();
    expect((await h.lifecycle.tick()).errors).toBe(0);
  });

  describe("reconcile", () => {
    it("GC forgets instances silent for a day once they own no active workspace, and keeps live ones", async () => {
      // Silent for two days by the database's clock (whatever the ManualClock says).
      await sql`INSERT INTO instances (id, name, started_at, heartbeat_at) VALUES
        ('00000000-0000-4000-8000-000000000001', 'gone:1', now() - interval '2 days', now() - interval '2 days'),
        ('00000000-0000-4000-8000-000000000002', 'gone:2', now() - interval '2 days', now() - interval '2 days')`.execute(h.db);
      // gone:2 still owns an active workspace: the tick strands it (owner_lost) before forgetting gone:2.
      const owned = await h.create();
      await sql`UPDATE workspaces SET owner_instance = '00000000-0000-4000-8000-000000000002' WHERE id = ${owned.workspaceId}::uuid`.execute(h.db);
      // h's own row is fresh: registered with the database's now() (the ManualClock says January).
      const ids = async () => (await sql<{ id: string }>`SELECT id FROM instances ORDER BY id`.execute(h.db)).rows.map((r) => r.id);
      expect(await ids()).toHaveLength(3);
      await h.lifecycle.tick();
      expect(await ids()).toEqual([h.instanceId]);
      expect(await workspaceRow(h.db, owned.workspaceId)).toMatchObject({ lifecycle: "stranded", lifecycle_reason: "owner_lost" });
    });

    it("a restart strands every non-terminal workspace of the previous incarnation; each is resumable", async () => {
      const draft = await h.create();
      const persistent = await h.create({ mode: "persistent" });
      const closedEphemeral = await h.create();
      await h.registry.transitionChangeset(closedEphemeral.changeset.id, "closed", "");
      const closedPersistent = await h.create({ mode: "persistent" });
      await h.registry.transitionChangeset(closedPersistent.changeset.id, "closed", "");
      // The process dies (no stop()); the same instance starts again.
      const next = await harness(h.db, { clock: h.clock, repoId: h.repoId });
      expect(next.logs.find((l) => l.msg === "startup reconcile")).toMatchObject({ stranded: 2, destroyed: 1, adopted: 1 });
      for (const ws of [draft, persistent]) {
        expect(await workspaceRow(h.db, ws.workspaceId)).toMatchObject({ lifecycle: "stranded", lifecycle_reason: "startup_reconcile" });
        const resumed = await next.lifecycle.resume(ws.sessionId, "agent-a");
        expect(next.registry.liveWorkspace(resumed.sessionId)).toBeDefined();
      }
      expect((await workspaceRow(h.db, closedEphemeral.workspaceId)).lifecycle).toBe("destroyed");
      expect(await workspaceRow(h.db, closedPersistent.workspaceId)).toMatchObject({ lifecycle: "active", owner_instance: next.instanceId });
      expect(next.registry.liveWorkspace(closedPersistent.sessionId)).toBeDefined();
    });

    it("a startup reconcile split into 4 shares handles every orphan exactly once, each with one event", async () => {
      const drafts = await Promise.all(Array.from({ length: 24 }, () => h.create()));
      const closed = await Promise.all(Array.from({ length: 8 }, (_, i) => h.create({ mode: i % 2 === 0 ? "ephemeral" : "persistent" })));
      for (const ws of closed) await h.registry.transitionChangeset(ws.changeset.id, "closed", "");
      // The shares are cut by the id's last byte: these ids fall into more than one of them.
      expect(new Set(drafts.map((ws) => parseInt(ws.workspaceId.slice(-2), 16) % 4)).size).toBeGreaterThan(1);
      const next = await harness(h.db, { clock: h.clock, repoId: h.repoId, settings: { reconcileSlices: 4 } });
      expect(next.logs.find((l) => l.msg === "startup reconcile")).toMatchObject({ stranded: 24, destroyed: 4, adopted: 4 });
      const ids = [...drafts, ...closed].map((ws) => ws.workspaceId);
      const events = await sql<{ workspace_id: string; kind: string; n: string }>`
        SELECT workspace_id, kind, count(*) AS n FROM events
        WHERE workspace_id = ANY(${`{${ids.join(",")}}`}::uuid[]) AND kind IN ('session.stranded', 'session.destroyed')
        GROUP BY workspace_id, kind`.execute(h.db);
      expect(events.rows.filter((r) => r.kind === "session.stranded").map((r) => r.workspace_id).sort()).toEqual(drafts.map((ws) => ws.workspaceId).sort());
      expect(events.rows.filter((r) => r.kind === "session.destroyed")).toHaveLength(4);
      expect(events.rows.every((r) => Number(r.n) === 1)).toBe(true);
      for (const ws of drafts) expect(await workspaceRow(h.db, ws.workspaceId)).toMatchObject({ lifecycle: "stranded", lifecycle_reason: "startup_reconcile" });
    });

    it("multi-instance: a live instance's workspaces are left alone until its heartbeat goes stale (by the database's clock)", async () => {
      const mine = await h.create();
      const other = await harness(h.db, { clock: h.clock, repoId: h.repoId, instanceName: "other-host:50051" });
      expect((await workspaceRow(h.db, mine.workspaceId)).lifecycle).toBe("active");
      const age = (ms: number) => sql`UPDATE instances SET heartbeat_at = now() - ${`${ms} milliseconds`}::interval WHERE id = ${h.instanceId}::uuid`.execute(h.db);
      await age(10_000); // h's heartbeat 10 s old: alive
      expect((await other.lifecycle.tick()).orphansStranded).toBe(0);
      h.clock.advance(86_400_000); // the application clock says nothing: a day later by it, h is still alive
      expect((await other.lifecycle.tick()).orphansStranded).toBe(0);
      await age(16_000); // > 3 heartbeats (15 s) old: dead
      expect((await other.lifecycle.tick()).orphansStranded).toBe(1);
      expect(await workspaceRow(h.db, mine.workspaceId)).toMatchObject({ lifecycle: "stranded", lifecycle_reason: "owner_lost" });
      await other.lifecycle.stop();
    });

    it("the instance heartbeat and stop write the database's now(), whatever the application clock says", async () => {
      const other = await harness(h.db, { clock: new ManualClock(Date.UTC(2001, 0, 1)), repoId: h.repoId, instanceName: "other-host:50052", settings: { instanceHeartbeatMs: 20 } });
      const times = async () =>
        (await sql<{ heartbeat_s: number; stopped_s: number | null }>`
          SELECT extract(epoch FROM now() - heartbeat_at)::float8 AS heartbeat_s, extract(epoch FROM now() - stopped_at)::float8 AS stopped_s
          FROM instances WHERE id = ${other.instanceId}::uuid`.execute(h.db)).rows[0]!;
      expect(Math.abs((await times()).heartbeat_s)).toBeLessThan(5); // registered at now()
      await sql`UPDATE instances SET heartbeat_at = now() - interval '1 hour' WHERE id = ${other.instanceId}::uuid`.execute(h.db);
      other.lifecycle.start();
      const until = Date.now() + 5000;
      while ((await times()).heartbeat_s > 5 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      await other.lifecycle.stop();
      const t = await times();
      expect(Math.abs(t.heartbeat_s)).toBeLessThan(5);
      expect(Math.abs(t.stopped_s!)).toBeLessThan(5);
    });

    it("a stopped instance's workspaces are orphans at once", async () => {
      const mine = await h.create();
      const other = await harness(h.db, { clock: h.clock, repoId: h.repoId, instanceName: "other-host:50051" });
      await h.lifecycle.stop();
      expect((await other.lifecycle.tick()).orphansStranded).toBe(1);
      expect((await workspaceRow(h.db, mine.workspaceId)).lifecycle).toBe("stranded");
    });
  });
});

/** The same SQL on every other kind this machine has (PGlite: the embedded database). */
describe.each(DATABASE_KINDS.filter((k) => k !== PRIMARY_KIND))("lifecycle smoke on %s", (kind) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(kind);
  }, 120_000);
  afterAll(async () => {
    await database?.drop();
  });

  it("strand, resume, abandon, sweep, flush and reconcile run", async () => {
    const h = await harness(database.opened.db);
    const a = await h.create();
    const b = await h.create({ mode: "persistent" });
    h.clock.advance(1000);
    h.registry.touch(b);
    expect(await h.lifecycle.flushActivity()).toBe(1);
    await h.lifecycle.strand(a.sessionId, "explicit");
    const resumed = await h.lifecycle.resume(a.sessionId, "agent-a");
    expect((await failure(h.lifecycle.resume(a.sessionId, "agent-a"))).metadata.new_session_id).toBe(resumed.sessionId);
    await h.lifecycle.abandon(resumed.sessionId, "explicit");
    expect((await workspaceRow(h.db, a.workspaceId)).lifecycle).toBe("abandoned");
    const next = await harness(h.db, { clock: h.clock, repoId: h.repoId });
    expect((await workspaceRow(h.db, b.workspaceId)).lifecycle).toBe("stranded");
    next.clock.advance(5 * 3600 * 1000);
    expect((await next.lifecycle.tick()).abandoned).toBe(1);
  }, 60_000);
});
