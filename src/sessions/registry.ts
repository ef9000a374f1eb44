/**
 * The registry of session workspaces. Live workspaces are held in memory for fast reads; every
 * change is written through to the database (with its events) before the call returns, so a
 * restart loses nothing that was acknowledged. Reads of sessions that are not live here
 * (stranded, ended, or owned by another instance) go to the database.
 *
 * This class is the facade the other layers hold: repositories (repositories.ts), changesets
 * (changesets.ts, the interned cache and TransitionChangeset) and the creation of a workspace
 * (workspace-creation.ts) are delegated; assertActive is defined in workspace.ts and re-exported
 * here.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { Clock } from "../platform/clock.js";
import { BerthError, failedPrecondition, notFound } from "../platform/errors.js";
import { assertActive, type Changeset, type Repository, type RepositoryCheck, type Workspace } from "./workspace.js";
import type { Change, UnitOfWork } from "../platform/unit-of-work.js";
import type { Db } from "../platform/database.js";
import type { ChangesetStateName, LifecycleName } from "../platform/schema.js";
import * as sqlRepo from "./registry.repository.js";
import { registryFollower } from "./coherence.js";
import { SessionHooks } from "./session-hooks.js";
import { Changesets, changesetFromRow, changesetNotFound, type MoveOptions } from "./changesets.js";
import * as historyRepo from "./changeset-history.repository.js";
import { Comments } from "./comments.js";
import { Repositories, type RepositoryLocation } from "./repositories.js";
import { RepositoryLocations } from "../repository/locations.js";
import { draftCreates, makeWorkspace, type DraftCreates, type CreateWorkspaceInput } from "./workspace-creation.js";
import { CoalescedLookup } from "../platform/coalesced-lookup.js";
import { isUuid } from "../platform/uuid.js";

export { assertActive } from "./workspace.js";
export { DEFAULT_PERSISTENT_TTL_SECONDS, type CreateWorkspaceInput } from "./workspace-creation.js";

export interface RegistryDeps {
  /** Every change goes through it; the registry follows every commit through it (coherence.ts). */
  readonly uow: UnitOfWork;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly newId?: () => string;
  /**
   * The instance (incarnation) this registry runs in: written as workspaces.owner_instance of the
   * workspaces it creates or resumes, and the only active workspaces load() takes into memory.
   * Undefined (tests of the registry alone): owner NULL, and load() takes every active workspace.
   */
  readonly instanceId?: string;
  /** Where repositories' objects are on this instance (source paths, mirrors); default: source paths only. */
  readonly locations?: RepositoryLocations;
}

/** What an activity extender answers: the workspaces (by id) whose sessions it keeps connected now. */
export type ActivityExtender = () => Iterable<string>;

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

export type { SessionFacts } from "./registry.repository.js";

/**
 * The facts a check of this workspace object relies on, as it holds them now (taken right after
 * the check, in the same tick): what a write that skips the row read must find in the row.
 */
export function sessionFacts(ws: Workspace): sqlRepo.SessionFacts {
  return {
    workspaceId: ws.workspaceId,
    sessionId: ws.sessionId,
    lifecycle: ws.lifecycle,
    baseCommit: ws.baseCommit,
    changesetId: ws.changeset.id,
    changesetState: ws.changeset.state,
  };
}

/** Where a session stands in listSessions' order: its workspace's creation time (ms) and id, neither of which ever changes. */
export type SessionKey = readonly [createdAtMs: number, workspaceId: string];

export function sessionKey(ws: Workspace): SessionKey {
  return [ws.createdAt, ws.workspaceId];
}

/** Where a changeset stands in listChangesets' order: its creation time (ms) and id, neither of which ever changes. */
export type ChangesetKey = readonly [createdAtMs: number, changesetId: string];

export function changesetKey(cs: Changeset): ChangesetKey {
  return [cs.createdAt, cs.id];
}

/** One recorded state change of a changeset (changeset_transitions). */
export interface ChangesetTransitionRecord {
  readonly from: ChangesetStateName;
  readonly to: ChangesetStateName;
  readonly reason: string;
  /** The calling agent, "anonymous" (auth off) or "berth" (the server). */
  readonly who: string;
  readonly at: number;
}

/** What GetChangeset shows of a changeset, read from the database. */
export interface ChangesetReview {
  readonly changeset: Changeset;
  /** The branch a MERGED transition merged it into; undefined when none did. */
  readonly mergedInto: string | undefined;
  /** Oldest first. */
  readonly transitions: readonly ChangesetTransitionRecord[];
  /** Every session of it, any lifecycle, oldest first. */
  readonly sessions: readonly Workspace[];
}

export class WorkspaceRegistry {
  /** The repository catalogue (repositories.ts). */
  private readonly repositories: Repositories;
  /** Active workspaces owned by this instance, by session id. */
  private readonly live = new Map<string, Workspace>();
  /** The interned changesets of live workspaces and their transitions (changesets.ts). */
  private readonly changesets: Changesets;
  /** Review comments on changesets (comments.ts). */
  readonly comments: Comments;
  private readonly newId: () => string;
  /** Concurrent common creates, committed together (workspace-creation.ts). */
  private readonly drafts: DraftCreates;
  /**
   * Activity since the last flush (LifecycleManager.flushActivity): workspace id → latest time.
   * By id, not by object, so that sessions this instance does not hold live (another instance's,
   * read from their row by each call) are written too, once per flush.
   */
  private dirty = new Map<string, number>();
  /** Open AttachSession streams per session (connected while it has one), with its workspace. */
  private readonly attached = new Map<string, { workspaceId: string; count: number }>();
  /** What else keeps sessions connected (the turn scheduler: a RUNNING turn); renewed at every flush. */
  private readonly extenders: ActivityExtender[] = [];
  /** What happens beyond this layer when sessions end or changesets move (claims, overlay register it). */
  readonly hooks = new SessionHooks();
  /** The per-call row reads of getWorkspace, merged: many RPCs in flight share one statement. */
  private readonly sessionRows = new CoalescedLookup<string, sqlRepo.WorkspaceRow>((ids) => sqlRepo.findWorkspacesBySessions(this.db, ids));

  /** The same for sessions held live here: only what confirms the live object (registry.repository.ts, LiveCheckRow). */
  private readonly liveChecks = new CoalescedLookup<string, sqlRepo.LiveCheckRow>((ids) => sqlRepo.checkLiveSessions(this.db, ids));

  /** Where this instance reads and writes each repository's git objects (repository/locations.ts). */
  readonly locations: RepositoryLocations;

  constructor(private readonly deps: RegistryDeps) {
    this.newId = deps.newId ?? randomUUID;
    this.locations = deps.locations ?? RepositoryLocations.sourcesOnly();
    this.repositories = new Repositories(deps.uow.db, deps.clock, this.newId, this.locations);
    this.changesets = new Changesets(deps.uow, deps.clock, this.hooks, deps.logger);
    this.comments = new Comments(deps.uow, deps.clock, this.newId);
    this.drafts = draftCreates(deps.uow);
    deps.uow.addFollower("registry", registryFollower(this));
  }

  get db(): Db {
    return this.deps.uow.db;
  }

  get uow(): UnitOfWork {
    return this.deps.uow;
  }

  /** Loads repositories and this instance's active workspaces into memory. */
  async load(): Promise<void> {
    await this.repositories.load();
    const rows = this.deps.instanceId === undefined
      ? await sqlRepo.listWorkspacesByLifecycle(this.db, ["active"])
      : await sqlRepo.listActiveWorkspacesOfInstance(this.db, this.deps.instanceId);
    for (const row of rows) this.admit(this.workspaceFromRow(row));
  }

  /** The instance this registry runs in (undefined when it has none). */
  get instanceId(): string | undefined {
    return this.deps.instanceId;
  }

  /** A fresh id (session ids minted by a resume). */
  mintId(): string {
    return this.newId();
  }

  // ---- repositories -------------------------------------------------------------------

  registerRepository(name: string, location: RepositoryLocation, captureExclude: readonly string[] = [], requestId = "", independentReview = true): Promise<Repository> {
    return this.repositories.registerRepository(name, location, captureExclude, requestId, independentReview);
  }

  updateRepository(id: string, set: { independentReview?: boolean | undefined }): Promise<Repository> {
    return this.repositories.updateRepository(id, set);
  }

  independentReviewOfChangeset(changesetId: string): Promise<boolean> {
    return this.repositories.independentReviewOfChangeset(changesetId);
  }

  listRepositories(): Promise<Repository[]> {
    return this.repositories.listRepositories();
  }

  /** A page of repositories by name, after `afterName` (ListRepositories). */
  repositoriesAfter(afterName: string | undefined, limit: number): Promise<Repository[]> {
    return this.repositories.repositoriesAfter(afterName, limit);
  }

  /** SetRepositoryCheck (repositories.ts). */
  setRepositoryCheck(id: string, check: RepositoryCheck | null): Promise<Repository> {
    return this.repositories.setCheck(id, check);
  }

  repository(id: string): Promise<Repository> {
    return this.repositories.repository(id);
  }

  // ---- workspaces ---------------------------------------------------------------------

  async createWorkspace(input: CreateWorkspaceInput): Promise<Workspace> {
    const repo = await this.repository(input.repoId);
    const prior = await this.createdBy(input);
    if (prior) return prior;
    let ws: Workspace;
    try {
      ws = await makeWorkspace(
        { uow: this.uow, clock: this.deps.clock, newId: this.newId, instanceId: this.deps.instanceId, changesets: this.changesets, drafts: this.drafts, locations: this.locations },
        repo,
        input,
      );
    } catch (err) {
      // A concurrent retry of the same request won the unique index: answer what it made.
      const raced = err instanceof BerthError && err.reason === "SESSION_EXISTS" ? await this.createdBy(input) : undefined;
      if (raced) return raced;
      throw err;
    }
    this.admit(ws);
    return ws;
  }

  /**
   * The workspace an earlier CreateWorkspace with the same `request_id` (same repository and
   * agent) made, as it is now; REQUEST_ID_REUSED when that call asked for something else.
   */
  private async createdBy(input: CreateWorkspaceInput): Promise<Workspace | undefined> {
    if (!input.requestId) return undefined;
    const row = await sqlRepo.findWorkspaceByCreateRequest(this.db, input.repoId, input.agentId, input.requestId);
    if (!row) return undefined;
    const same =
      row.mode === input.mode &&
      row.intent === input.intent &&
      (input.sessionId === undefined || row.session_id === input.sessionId) &&
      (input.changesetId === undefined || row.changeset_id === input.changesetId) &&
      (input.agentName === undefined || row.agent_name === input.agentName);
    if (!same) {
      throw new BerthError("already_exists", "REQUEST_ID_REUSED", `request_id ${input.requestId} already created workspace ${row.id} with other settings`, {
        request_id: input.requestId,
        session_id: row.session_id,
        workspace_id: row.id,
      });
    }
    return this.getWorkspace(row.session_id);
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

  /**
   * The workspace of a session that may be used: active. Stranded, abandoned, destroyed and
   * resumed sessions answer FAILED_PRECONDITION with the facts a client needs to act.
   */
  async requireActive(sessionId: string): Promise<Workspace> {
    const ws = await this.getWorkspace(sessionId);
    assertActive(ws);
    return ws;
  }

  /**
   * Records activity of a session, live here or not (any instance may serve any session's RPC):
   * in memory at once; the lifecycle's activity flusher writes last_active_at of every touched
   * workspace in one batched UPDATE every few seconds, where the owner's GC reads it.
   */
  touch(ws: Workspace): void {
    const now = this.deps.clock.now();
    ws.lastActiveAt = now;
    if (ws.lifecycle === "active") this.markDirty(ws.workspaceId, now);
  }

  /**
   * A Heartbeat: the lease is renewed where the owner's GC reads it before the call answers. The
   * owner holds the session live and its GC reads its own memory, so there `touch` is enough;
   * anywhere else the renewal is written at once (one single-row UPDATE) rather than at the next
   * activity flush — a flush delayed on a starved instance must not strand a session whose
   * heartbeats were acknowledged. Other calls' activity stays batched (docs/lifecycle.md).
   * SESSION_STRANDED (…) when the session left `active` meanwhile.
   */
  async renewLease(ws: Workspace): Promise<void> {
    this.touch(ws);
    if (this.live.get(ws.sessionId) === ws) return;
    if (await sqlRepo.renewActivity(this.db, ws.workspaceId, new Date(ws.lastActiveAt))) return;
    assertActive(await this.getWorkspace(ws.sessionId));
  }

  /** Marks a workspace's activity at `at` for the next flush (a failed flush puts its batch back). */
  markDirty(workspaceId: string, at: number): void {
    const had = this.dirty.get(workspaceId);
    if (had === undefined || had < at) this.dirty.set(workspaceId, at);
  }

  /**
   * What the next flush writes, taken: every activity since the last call, and the renewal (at
   * `now`) of every session an open AttachSession stream here or an activity extender (a RUNNING
   * turn here) keeps connected. Workspace id → time.
   */
  takeActivity(now = this.deps.clock.now()): Map<string, number> {
    const out = this.dirty;
    this.dirty = new Map();
    for (const { workspaceId } of this.attached.values()) out.set(workspaceId, now);
    for (const extend of this.extenders) for (const workspaceId of extend()) out.set(workspaceId, now);
    return out;
  }

  /**
   * Registers something beyond this layer that keeps sessions connected while it lasts (the turn
   * scheduler: a RUNNING turn): the sessions it names are renewed at every activity flush.
   */
  addActivityExtender(extender: ActivityExtender): void {
    this.extenders.push(extender);
  }

  /**
   * Records an open AttachSession stream of a session (live here or not); returns the function
   * that records its close. While it is open the session is connected here, and every activity
   * flush renews its last_active_at, so that its owner (maybe another instance) sees it connected.
   */
  attach(ws: Pick<Workspace, "sessionId" | "workspaceId">): () => void {
    const { sessionId, workspaceId } = ws;
    const entry = this.attached.get(sessionId);
    if (entry) entry.count++;
    else this.attached.set(sessionId, { workspaceId, count: 1 });
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      const e = this.attached.get(sessionId);
      if (e && --e.count <= 0) this.attached.delete(sessionId);
    };
  }

  /** Number of open AttachSession streams of a session on this instance (connected while > 0). */
  attachedCount(sessionId: string): number {
    return this.attached.get(sessionId)?.count ?? 0;
  }

  /** Number of changesets held in memory (bounded by the live workspaces; tests). */
  get internedChangesets(): number {
    return this.changesets.size;
  }

  /** Brings a cached changeset up to date with a row read or written elsewhere. */
  refreshChangeset(row: sqlRepo.ChangesetRow): Changeset {
    return this.changesets.refreshChangeset(row);
  }

  /** A changeset transition committed (here or by another instance): the cached state follows its row, never backwards. */
  noteTransitioned(changesetId: string): void {
    this.changesets.noteTransitioned(changesetId);
  }

  /** A session ended (here or by another instance) while this instance may hold it live. */
  noteSessionEnded(sessionId: string, lifecycle: Exclude<LifecycleName, "active">, reason: string, at: number): void {
    const ws = this.drop(sessionId);
    if (!ws) return;
    ws.lifecycle = lifecycle;
    ws.lifecycleReason = reason;
    if (lifecycle === "stranded") ws.strandedAt = at;
  }

  /**
   * After missed events: every live workspace is checked against the database. One that is no
   * longer active here (ended, resumed, adopted elsewhere) is dropped; the others' changesets
   * are read again.
   */
  async resync(): Promise<void> {
    const rows = await sqlRepo.listWorkspacesByLifecycle(this.db, ["active"]);
    const active = new Map(rows.map((r) => [r.session_id, r]));
    for (const ws of [...this.live.values()]) {
      const row = active.get(ws.sessionId);
      if (!row) {
        this.drop(ws.sessionId);
        continue;
      }
      this.refreshChangeset(changesetRowOf(row));
    }
  }

  /** The lifecycle of each workspace (by id) that exists. */
  /** A workspace in any lifecycle by its (stable) id, from the database; undefined when there is none. */
  async workspaceById(workspaceId: string): Promise<Workspace | undefined> {
    const row = await sqlRepo.findWorkspaceById(this.db, workspaceId);
    return row ? this.workspaceFromRow(row) : undefined;
  }

  async lifecyclesOf(workspaceIds: readonly string[]): Promise<Map<string, LifecycleName>> {
    const rows = await this.db.selectFrom("workspaces").select(["id", "lifecycle"]).where("id", "in", workspaceIds).execute();
    return new Map(rows.map((r) => [r.id, r.lifecycle]));
  }

  liveWorkspace(sessionId: string): Workspace | undefined {
    return this.live.get(sessionId);
  }

  /** Every live workspace of this instance (for GC and liveness sweeps). */
  liveWorkspaces(): IterableIterator<Workspace> {
    return this.live.values();
  }

  get liveCount(): number {
    return this.live.size;
  }

  /**
   * A page of a repository's sessions in these lifecycles, oldest first, from the database (all
   * instances), after the session with key `after` (sessionKey of the last of the previous page).
   */
  async listSessions(repoId: string, lifecycles: readonly LifecycleName[], after: SessionKey | undefined, limit: number): Promise<Workspace[]> {
    await this.repository(repoId);
    const rows = await sqlRepo.listWorkspacesPage(this.db, repoId, lifecycles, after && { createdAt: new Date(after[0]), id: after[1] }, limit);
    return rows.map((row) => this.live.get(row.session_id) ?? this.workspaceFromRow(row));
  }

  /** `within`: the total counts only these repositories (a caller granted only some). */
  async countActive(repoId: string | undefined, within?: readonly string[]): Promise<{ active: number; total: number }> {
    if (repoId !== undefined) await this.repository(repoId);
    return sqlRepo.countActive(this.db, repoId, within);
  }

  /** The agents whose workspaces work (or worked) on a changeset: the only agents that may move it or join it. */
  agentsOfChangeset(changesetId: string): Promise<string[]> {
    return sqlRepo.agentsOfChangeset(this.db, changesetId);
  }

  /** The workspaces of a changeset that hold an overlay (active, stranded), oldest first; NOT_FOUND when the changeset does not exist. */
  async workspacesOfChangeset(changesetId: string): Promise<Workspace[]> {
    if (!(await sqlRepo.findChangeset(this.db, changesetId))) throw changesetNotFound(changesetId);
    return (await sqlRepo.workspacesOfChangeset(this.db, changesetId)).map((row) => this.live.get(row.session_id) ?? this.workspaceFromRow(row));
  }

  /** The repository of a changeset; undefined when there is no such changeset. */
  async repositoryOfChangeset(changesetId: string): Promise<string | undefined> {
    return (await sqlRepo.findChangeset(this.db, changesetId))?.repo_id;
  }

  /**
   * A page of a repository's changesets in these states (every state when empty), newest
   * created first, from the database (all instances), after the changeset with key `after`.
   */
  async listChangesets(repoId: string, states: readonly ChangesetStateName[], after: ChangesetKey | undefined, limit: number): Promise<Changeset[]> {
    await this.repository(repoId);
    const rows = await historyRepo.listChangesetsPage(this.db, repoId, states, after && { createdAt: new Date(after[0]), id: after[1] }, limit);
    return rows.map(changesetFromRow);
  }

  /** A changeset as a review shows it: its row, history and every session it had (NOT_FOUND when it does not exist). */
  async changesetReview(changesetId: string): Promise<ChangesetReview> {
    const row = await historyRepo.findReviewedChangeset(this.db, changesetId);
    if (!row) throw changesetNotFound(changesetId);
    const [transitions, sessions] = await Promise.all([historyRepo.listTransitions(this.db, changesetId), sqlRepo.allWorkspacesOfChangeset(this.db, changesetId)]);
    return {
      changeset: changesetFromRow(row),
      mergedInto: row.merged_into ?? undefined,
      transitions: transitions.map((t) => ({ from: t.from_state, to: t.to_state, reason: t.reason, who: t.who, at: t.at.getTime() })),
      sessions: sessions.map((w) => this.live.get(w.session_id) ?? this.workspaceFromRow(w)),
    };
  }

  transitionChangeset(changesetId: string, to: ChangesetStateName, reason: string, during?: (change: Change) => Promise<void>): Promise<Changeset> {
    return this.changesets.transitionChangeset(changesetId, to, reason, during);
  }

  /** A transition with a compare-and-set on the state it leaves (changesets.ts, moveChangeset). */
  moveChangeset(changesetId: string, to: ChangesetStateName, reason: string, opts: MoveOptions): Promise<{ changeset: Changeset; unchanged: boolean }> {
    return this.changesets.moveChangeset(changesetId, to, reason, opts);
  }

  // ---- shared with the lifecycle ------------------------------------------------------

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
    this.dirty.delete(ws.workspaceId);
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
function changesetRowOf(row: sqlRepo.WorkspaceRow): sqlRepo.ChangesetRow {
  return { id: row.changeset_id, repo_id: row.repo_id, state: row.cs_state, reason: row.cs_reason, created_at: row.cs_created_at, updated_at: row.cs_updated_at, version: row.cs_version };
}
