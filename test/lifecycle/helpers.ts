/** Shared set-up of the lifecycle tests: a registry on a real database, a manual clock, a lifecycle manager. */
import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import pino from "pino";
import { ManualClock } from "../../src/platform/clock.js";
import { BerthError } from "../../src/platform/errors.js";
import { DEFAULT_SETTINGS, LifecycleManager, type LifecycleSettings } from "../../src/sessions/lifecycle.js";
import { UnitOfWork } from "../../src/platform/unit-of-work.js";
import { registerClaimRules } from "../../src/claims/claim-rules.js";
import { WorkspaceRegistry } from "../../src/sessions/registry.js";
import type { ChangesetStateName } from "../../src/platform/schema.js";
import type { Db } from "../../src/platform/database.js";
import type { Workspace } from "../../src/sessions/workspace.js";

export const SETTINGS: LifecycleSettings = DEFAULT_SETTINGS;

export interface Harness {
  readonly db: Db;
  readonly clock: ManualClock;
  readonly registry: WorkspaceRegistry;
  readonly lifecycle: LifecycleManager;
  readonly instanceId: string;
  readonly repoId: string;
  readonly logs: Record<string, unknown>[];
  create(opts?: { mode?: "ephemeral" | "persistent"; agentId?: string; ttlSeconds?: number }): Promise<Workspace>;
}

export async function harness(
  db: Db,
  opts: { settings?: Partial<LifecycleSettings>; clock?: ManualClock; instanceName?: string; repoId?: string; startup?: boolean } = {},
): Promise<Harness> {
  const clock = opts.clock ?? new ManualClock();
  const logs: Record<string, unknown>[] = [];
  const logger = pino({ level: "debug" }, { write: (l: string) => void logs.push(JSON.parse(l) as Record<string, unknown>) });
  const instanceId = randomUUID();
  const registry = new WorkspaceRegistry({ uow: new UnitOfWork(db, logger), clock, logger, instanceId });
  registerClaimRules(registry.hooks, { releaseOnSubmit: true });
  const lifecycle = new LifecycleManager({
    registry,
    clock,
    logger,
    instanceName: opts.instanceName ?? "test-instance",
    settings: { ...SETTINGS, ...opts.settings },
  });
  if (opts.startup !== false) await lifecycle.startup();
  await registry.load();
  const repoId = opts.repoId ?? (await registry.registerRepository(`repo-${randomUUID().slice(0, 8)}`, {})).id;
  return {
    db,
    clock,
    registry,
    lifecycle,
    instanceId,
    repoId,
    logs,
    create: (o = {}) =>
      registry.createWorkspace({
        repoId,
        intent: "work",
        baseCommit: "abc123",
        mode: o.mode ?? "ephemeral",
        ttlSeconds: o.ttlSeconds,
        agentId: o.agentId ?? "agent-a",
        agentName: undefined,
        sessionId: undefined,
        changesetId: undefined,
      }),
  };
}

/** Forces a changeset into a state (bypassing the state machine) for table-driven tests. */
export async function setChangesetState(db: Db, changesetId: string, state: ChangesetStateName): Promise<void> {
  await sql`UPDATE changesets SET state = ${state} WHERE id = ${changesetId}::uuid`.execute(db);
}

export async function workspaceRow(db: Db, workspaceId: string) {
  const r = await sql<{ lifecycle: string; lifecycle_reason: string; session_id: string; stranded_at: Date | null; last_active_at: Date; owner_instance: string | null }>`
    SELECT lifecycle, lifecycle_reason, session_id, stranded_at, last_active_at, owner_instance FROM workspaces WHERE id = ${workspaceId}::uuid`.execute(db);
  return r.rows[0]!;
}

export async function eventsOf(db: Db, workspaceId: string): Promise<{ kind: string; reason: string; session_id: string | null }[]> {
  const r = await sql<{ kind: string; reason: string; session_id: string | null }>`
    SELECT kind, reason, session_id FROM events WHERE workspace_id = ${workspaceId}::uuid ORDER BY seq`.execute(db);
  return r.rows;
}

/** The BerthError a promise rejects with. */
export async function failure(p: Promise<unknown>): Promise<BerthError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof BerthError) return err;
    throw err;
  }
  throw new Error("expected a failure");
}
