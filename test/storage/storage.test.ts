/**
 * The storage layer on both databases: real PostgreSQL and the embedded PGlite run the same
 * migrations and queries. Where PostgreSQL is not running this suite runs on PGlite alone and says so.
 */
import { sequencePending } from "../../src/delivery/sequencer.js";
import { readEvents } from "../../src/delivery/event-store.js";
import { sql } from "kysely";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/platform/clock.js";
import { UnitOfWork } from "../../src/platform/unit-of-work.js";
import { WorkspaceRegistry } from "../../src/sessions/registry.js";
import { migrateToLatest, migrationStatus, SchemaTooNewError } from "../../src/platform/migrate.js";
import { createTestDatabase, DATABASE_KINDS, type TestDatabase } from "../support/database.js";
import { BerthError } from "../../src/platform/errors.js";

if (!DATABASE_KINDS.includes("postgres")) console.warn("*** storage suite: PostgreSQL not running, testing PGlite only ***");

const silent = pino({ level: "silent" });

describe.each(DATABASE_KINDS)("storage on %s", (kind) => {
  let database: TestDatabase;
  let registry: WorkspaceRegistry;
  const clock = new ManualClock();

  beforeAll(async () => {
    database = await createTestDatabase(kind, { migrate: false });
    await migrateToLatest(database.opened.db);
    registry = new WorkspaceRegistry({ uow: new UnitOfWork(database.opened.db, silent), clock, logger: silent });
    await registry.load();
  }, 60_000);
  afterAll(async () => {
    await database?.drop();
  });

  it("applies every migration once", async () => {
    const status = await migrationStatus(database.opened.db);
    expect(status.length).toBeGreaterThan(0);
    expect(status.every((m) => m.applied)).toBe(true);
    expect(await migrateToLatest(database.opened.db)).toEqual([]);
  });

  it("refuses a database migrated by a newer Berth", async () => {
    await sql`INSERT INTO kysely_migration (name, timestamp) VALUES ('9999_from_the_future', now())`.execute(database.opened.db);
    try {
      await expect(migrateToLatest(database.opened.db)).rejects.toBeInstanceOf(SchemaTooNewError);
    } finally {
      await sql`DELETE FROM kysely_migration WHERE name = '9999_from_the_future'`.execute(database.opened.db);
    }
  });

  it("hands out gap-free agent names under concurrency", async () => {
    const repo = await registry.registerRepository(`names-${kind}`, {});
    const created = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        registry.createWorkspace({ repoId: repo.id, intent: "", baseCommit: "main", mode: "ephemeral", ttlSeconds: undefined, agentId: `a${i}`, agentName: undefined, sessionId: undefined, changesetId: undefined }),
      ),
    );
    expect(created.map((w) => w.agentName).sort((a, b) => Number(a.slice(6)) - Number(b.slice(6)))).toEqual(Array.from({ length: 25 }, (_, i) => `agent-${i + 1}`));
  });

  it("stores the session.created event in the same transaction, and none for a failed create", async () => {
    const repo = await registry.registerRepository(`events-${kind}`, {});
    const ws = await registry.createWorkspace({ repoId: repo.id, intent: "x", baseCommit: "main", mode: "ephemeral", ttlSeconds: undefined, agentId: "a", agentName: "named", sessionId: undefined, changesetId: undefined });
    const rows = await database.opened.db.selectFrom("events").select(["kind", "session_id"]).where("repo_id", "=", repo.id).execute();
    expect(rows).toEqual([{ kind: "session.created", session_id: ws.sessionId }]);

    const err = await registry
      .createWorkspace({ repoId: repo.id, intent: "x", baseCommit: "main", mode: "ephemeral", ttlSeconds: undefined, agentId: "a", agentName: "again", sessionId: ws.sessionId, changesetId: undefined })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BerthError);
    expect((err as BerthError).reason).toBe("SESSION_EXISTS");
    expect(await database.opened.db.selectFrom("events").select("kind").where("repo_id", "=", repo.id).execute()).toHaveLength(1);
    // The failed create rolled back its changeset too.
    expect(await database.opened.db.selectFrom("changesets").select("id").where("repo_id", "=", repo.id).execute()).toHaveLength(1);
  });

  it("stores session.created with the agent name the counter assigned, in the same statement", async () => {
    const repo = await registry.registerRepository(`payload-${kind}`, {});
    const ws = await registry.createWorkspace({ repoId: repo.id, intent: "i".repeat(300), baseCommit: "main", mode: "persistent", ttlSeconds: 60, agentId: "a", agentName: undefined, sessionId: undefined, changesetId: undefined });
    await sequencePending(database.opened.db);
    const events = (await readEvents(database.opened.db, 0n, 100_000)).filter((e) => e.event.sessionId === ws.sessionId);
    expect(events).toHaveLength(1);
    const e = events[0]!.event;
    expect(e).toMatchObject({ kind: "session.created", repoId: repo.id, workspaceId: ws.workspaceId, agentId: "a", changesetId: ws.changeset.id });
    expect(e.payload).toEqual({ case: "sessionCreated", value: expect.objectContaining({ agentName: ws.agentName, intent: "i".repeat(300), baseCommit: "main", mode: 2 }) });
  });

  it("loads live workspaces back after a restart of the registry", async () => {
    const repo = await registry.registerRepository(`reload-${kind}`, {});
    const ws = await registry.createWorkspace({ repoId: repo.id, intent: "keep", baseCommit: "main", mode: "persistent", ttlSeconds: 120, agentId: "a", agentName: undefined, sessionId: undefined, changesetId: undefined });
    const fresh = new WorkspaceRegistry({ uow: new UnitOfWork(database.opened.db, silent), clock, logger: silent });
    await fresh.load();
    const back = fresh.liveWorkspace(ws.sessionId);
    expect(back).toMatchObject({ workspaceId: ws.workspaceId, intent: "keep", mode: "persistent", expiresAt: ws.expiresAt, agentName: ws.agentName });
    expect(back?.changeset.state).toBe("draft");
  });

  it("shares one changeset object between the workspaces that work on it", async () => {
    const repo = await registry.registerRepository(`shared-${kind}`, {});
    const a = await registry.createWorkspace({ repoId: repo.id, intent: "", baseCommit: "main", mode: "ephemeral", ttlSeconds: undefined, agentId: "a", agentName: undefined, sessionId: undefined, changesetId: undefined });
    const b = await registry.createWorkspace({ repoId: repo.id, intent: "", baseCommit: "main", mode: "ephemeral", ttlSeconds: undefined, agentId: "b", agentName: undefined, sessionId: undefined, changesetId: a.changeset.id });
    await registry.transitionChangeset(a.changeset.id, "submitted", "");
    expect(b.changeset.state).toBe("submitted");
    const refused = await registry.transitionChangeset(a.changeset.id, "merged", "").catch((e: unknown) => e);
    expect((refused as BerthError).reason).toBe("INVALID_TRANSITION");
  });

  it("a live session's lookup follows what another writer committed: base, changeset state (a newer version, at a microsecond updated_at), and its end", async () => {
    const repo = await registry.registerRepository(`live-check-${kind}`, {});
    const ws = await registry.createWorkspace({ repoId: repo.id, intent: "", baseCommit: "main", mode: "ephemeral", ttlSeconds: undefined, agentId: "a", agentName: undefined, sessionId: undefined, changesetId: undefined });
    const db = database.opened.db;
    // Another instance's writes: not through this registry, so only the row read can tell.
    await sql`UPDATE workspaces SET base_commit = 'rebased' WHERE id = ${ws.workspaceId}::uuid`.execute(db);
    const movedAt = ws.changeset.updatedAt + 5;
    await sql`UPDATE changesets SET state = 'submitted', reason = 'elsewhere', version = version + 1, updated_at = ${new Date(movedAt)}::timestamptz + interval '999 microseconds' WHERE id = ${ws.changeset.id}::uuid`.execute(db);
    const seen = await registry.getWorkspace(ws.sessionId);
    expect(seen).toBe(ws);
    expect(seen.baseCommit).toBe("rebased");
    // Truncated to the millisecond, as a Date read of the full row would have it.
    expect(seen.changeset).toMatchObject({ state: "submitted", reason: "elsewhere", updatedAt: movedAt });
    await sql`UPDATE workspaces SET lifecycle = 'stranded', lifecycle_reason = 'elsewhere', stranded_at = now() WHERE id = ${ws.workspaceId}::uuid`.execute(db);
    const ended = await registry.getWorkspace(ws.sessionId);
    expect(ended).not.toBe(ws);
    expect(ended).toMatchObject({ lifecycle: "stranded", lifecycleReason: "elsewhere", baseCommit: "rebased" });
    expect(registry.liveWorkspace(ws.sessionId)).toBeUndefined();
  });
});
