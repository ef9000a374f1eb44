/**
 * The workspaces this instance holds live, and the lookup of a session that checks them against
 * the database before answering. The live map is only a cache: any instance may strand, end or
 * move a session, so a live object is kept only while its row agrees, and the changeset a live
 * workspace holds is the interned one (changesets.ts), shared with every other live workspace of
 * that changeset. Kept apart from the registry (registry.ts, the facade the other layers call) so
 * that what may make or drop a live object is in one place.
 */
import type { Db } from "../platform/database.js";
import { failedPrecondition, notFound } from "../platform/errors.js";
import type { UnitOfWork } from "../platform/unit-of-work.js";
import { CoalescedLookup } from "../platform/coalesced-lookup.js";
import { isUuid } from "../platform/uuid.js";
import type { Changeset, Workspace } from "./workspace.js";
import * as sqlRepo from "./registry.repository.js";
import type { Changesets } from "./changesets.js";
import type { SessionActivity } from "./session-activity.js";

/**
 * The Workspace objects some registry of this process holds live (admitted, not yet dropped).
 * Each registry's live objects are its own, so membership says "live on the instance whose
 * registry made this object": a layer above (the overlay's caches) can tell without holding the
 * registry. Weak: it keeps nothing alive.
 */
const liveHere = new WeakSet<Workspace>();

/** Whether `ws` is a workspace its registry holds live on this instance (not another instance's, not ended). */
export function isLiveHere(ws: Workspace): boolean {
  return liveHere.has(ws);
}

export class LiveWorkspaces {
  /** Active workspaces owned by this instance, by session id. */
  private readonly live = new Map<string, Workspace>();
  /** The per-call row reads of getWorkspace, merged: many RPCs in flight share one statement. */
  private readonly sessionRows = new CoalescedLookup<string, sqlRepo.WorkspaceRow>((ids) => sqlRepo.findWorkspacesBySessions(this.db, ids));

  /** The same for sessions held live here: only what confirms the live object (registry.repository.ts, LiveCheckRow). */
  private readonly liveChecks = new CoalescedLookup<string, sqlRepo.LiveCheckRow>((ids) => sqlRepo.checkLiveSessions(this.db, ids));

  constructor(
    private readonly uow: UnitOfWork,
    /** The interned changesets of live workspaces (changesets.ts). */
    private readonly changesets: Changesets,
    /** A dropped workspace's pending activity goes with it (session-activity.ts). */
    private readonly activity: SessionActivity,
  ) {}

  private get db(): Db {
    return this.uow.db;
  }

  get(sessionId: string): Workspace | undefined {
    return this.live.get(sessionId);
  }

  values(): IterableIterator<Workspace> {
    return this.live.values();
  }

  get size(): number {
    return this.live.size;
  }

  /** The workspace of a session in any lifecycle state; NOT_FOUND when the session never existed. */
  async getWorkspace(sessionId: string): Promise<Workspace> {
    // The live map is a cache, checked against PostgreSQL before it answers: another instance
    // may have stranded, ended or moved this session a moment ago (its commit reaches this
    // instance's followers a few milliseconds later).
    // A malformed id keeps a statement of its own: its cast error is not the others' to share.
    const uuid = isUuid(sessionId);
    if (uuid && this.live.has(sessionId)) {
      // Held live: the narrow check decides; when it says the live object is stale, the full row is read.
      const held = this.confirmLive(sessionId, await this.liveChecks.get(sessionId));
      if (held) return held;
    }
    const row = uuid ? await this.sessionRows.get(sessionId) : await sqlRepo.findWorkspaceBySession(this.db, sessionId);
    const held = this.confirmLive(sessionId, row && sqlRepo.liveCheckOf(row));
    if (held) return held;
    if (row) return this.workspaceFromRow(row);
    const redirect = await sqlRepo.findRedirect(this.db, sessionId);
    if (redirect) {
      throw failedPrecondition("SESSION_RESUMED", `session ${sessionId} was resumed as ${redirect.new_session_id}`, {
        session_id: sessionId,
        new_session_id: redirect.new_session_id,
        workspace_id: redirect.workspace_id,
      });
    }
    throw notFound("SESSION_NOT_FOUND", `session ${sessionId} has no workspace`, { session_id: sessionId });
  }

  /**
   * The live workspace of a session if `row`, read after the call began, says it is still the
   * one: active in the same workspace (its base and changeset state brought up to date from the
   * row). Otherwise a live object is dropped (ended, resumed or moved elsewhere meanwhile).
   */
  private confirmLive(sessionId: string, row: sqlRepo.LiveCheckRow | undefined): Workspace | undefined {
    const live = this.live.get(sessionId);
    if (!live) return undefined;
    if (row?.lifecycle === "active" && row.id === live.workspaceId) {
      this.changesets.noteChangesetState(row.changeset_id, row.cs_state, row.cs_reason, row.cs_updated_ms, row.cs_version);
      // A RebaseWorkspace (on any instance) moves the base in the row.
      live.baseCommit = row.base_commit;
      return live;
    }
    this.drop(sessionId);
    return undefined;
  }

  /** Holds a workspace live here; its changeset becomes (or is replaced by) the interned one. */
  admit(ws: Workspace): void {
    const before = this.live.get(ws.sessionId);
    if (before === ws) return;
    if (before) this.forget(before);
    const cs = this.changesets.retain(ws.changeset);
    // Built while no live workspace held its changeset, and another was admitted meanwhile: share that one.
    if (cs !== ws.changeset) (ws as { changeset: Changeset }).changeset = cs;
    this.live.set(ws.sessionId, ws);
    liveHere.add(ws);
  }

  /** Forgets a live workspace (it was ended or stranded); its changeset goes with the last live workspace that references it. */
  drop(sessionId: string): Workspace | undefined {
    const ws = this.live.get(sessionId);
    if (!ws) return undefined;
    this.live.delete(sessionId);
    this.forget(ws);
    this.activity.forget(ws.workspaceId);
    return ws;
  }

  private forget(ws: Workspace): void {
    liveHere.delete(ws);
    this.changesets.release(ws.changeset.id);
  }

  workspaceFromRow(row: sqlRepo.WorkspaceRow): Workspace {
    const changeset = this.changesets.internChangeset(changesetRowOf(row));
    return {
      workspaceId: row.id,
      sessionId: row.session_id,
      repoId: row.repo_id,
      agentId: row.agent_id,
      agentName: row.agent_name,
      changeset,
      intent: row.intent,
      baseCommit: row.base_commit,
      mode: row.mode,
      expiresAt: row.expires_at?.getTime() ?? null,
      createdAt: row.created_at.getTime(),
      lastActiveAt: row.last_active_at.getTime(),
      lifecycle: row.lifecycle,
      lifecycleReason: row.lifecycle_reason,
      strandedAt: row.stranded_at?.getTime() ?? null,
      resumedFrom: row.resumed_from,
    };
  }
}

/** The changeset columns of a workspace row (joined). */
export function changesetRowOf(row: sqlRepo.WorkspaceRow): sqlRepo.ChangesetRow {
  return { id: row.changeset_id, repo_id: row.repo_id, state: row.cs_state, reason: row.cs_reason, created_at: row.cs_created_at, updated_at: row.cs_updated_at, version: row.cs_version };
}
