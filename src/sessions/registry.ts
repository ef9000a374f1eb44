/**
 * The registry of session workspaces. Live workspaces are held in memory for fast reads; every
 * change is written through to the database (with its events) before the call returns, so a
 * restart loses nothing that was acknowledged. Reads of sessions that are not live here
 * (stranded, ended, or owned by another instance) go to the database.
 *
 * This class is the facade the other layers hold: repositories (repositories.ts), changesets
 * (changesets.ts, the interned cache and TransitionChangeset), the creation of a workspace
 * (workspace-creation.ts), the live map and the lookup that checks it (live-workspaces.ts), the
 * activity gathered between two flushes (session-activity.ts) and the reads that go to the
 * database whatever is live here (registry-reads.ts) are delegated; assertActive is defined in
 * workspace.ts and re-exported here, as are isLiveHere and the keys and review those reads
 * answer with.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { Clock } from "../platform/clock.js";
import { BerthError } from "../platform/errors.js";
import { assertActive, type Changeset, type Repository, type RepositoryCheck, type Workspace } from "./workspace.js";
import type { Change, Tx, UnitOfWork } from "../platform/unit-of-work.js";
import type { Db } from "../platform/database.js";
import type { ChangesetStateName, LifecycleName } from "../platform/schema.js";
import * as sqlRepo from "./registry.repository.js";
import { registryFollower } from "./coherence.js";
import { SessionHooks } from "./session-hooks.js";
import { Changesets, type MoveOptions } from "./changesets.js";
import { Comments } from "./comments.js";
import { Repositories, type RepositoryLocation } from "./repositories.js";
import { RepositoryLocations } from "../repository/locations.js";
import { draftCreates, makeWorkspace, type DraftCreates, type CreateWorkspaceInput } from "./workspace-creation.js";
import { SessionActivity, type ActivityExtender } from "./session-activity.js";
import { RegistryReads, type ChangesetKey, type ChangesetReview, type SessionKey } from "./registry-reads.js";
import { changesetRowOf, LiveWorkspaces } from "./live-workspaces.js";

export { assertActive } from "./workspace.js";
export { DEFAULT_PERSISTENT_TTL_SECONDS, type CreateWorkspaceInput } from "./workspace-creation.js";
export type { ActivityExtender } from "./session-activity.js";
export { isLiveHere } from "./live-workspaces.js";
export { changesetKey, sessionKey, type ChangesetKey, type ChangesetReview, type ChangesetTransitionRecord, type SessionKey } from "./registry-reads.js";

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

export class WorkspaceRegistry {
  /** The repository catalogue (repositories.ts). */
  private readonly repositories: Repositories;
  /** Active workspaces owned by this instance, by session id, and the lookup that checks them (live-workspaces.ts). */
  private readonly live: LiveWorkspaces;
  /** The interned changesets of live workspaces and their transitions (changesets.ts). */
  private readonly changesets: Changesets;
  /** Review comments on changesets (comments.ts). */
  readonly comments: Comments;
  private readonly newId: () => string;
  /** Concurrent common creates, committed together (workspace-creation.ts). */
  private readonly drafts: DraftCreates;
  /** Activity, attached streams and extenders since the last flush (session-activity.ts). */
  private readonly activity: SessionActivity;
  /** The reads that go to the database whatever is live here (registry-reads.ts). */
  private readonly reads: RegistryReads;
  /** What happens beyond this layer when sessions end or changesets move (claims, overlay register it). */
  readonly hooks = new SessionHooks();
  /** Where this instance reads and writes each repository's git objects (repository/locations.ts). */
  readonly locations: RepositoryLocations;

  constructor(private readonly deps: RegistryDeps) {
    this.newId = deps.newId ?? randomUUID;
    this.locations = deps.locations ?? RepositoryLocations.sourcesOnly();
    this.repositories = new Repositories(deps.uow.db, deps.clock, this.newId, this.locations);
    this.changesets = new Changesets(deps.uow, deps.clock, this.hooks, deps.logger);
    this.comments = new Comments(deps.uow, deps.clock, this.newId);
    this.drafts = draftCreates(deps.uow);
    this.activity = new SessionActivity(deps.clock);
    this.live = new LiveWorkspaces(deps.uow, this.changesets, this.activity);
    this.reads = new RegistryReads(this);
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

  /** The workspace of a session in any lifecycle state, checked against the database; NOT_FOUND when the session never existed. */
  getWorkspace(sessionId: string): Promise<Workspace> {
    return this.live.getWorkspace(sessionId);
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

  /** Records activity of a session, live here or not, for the next flush (session-activity.ts). */
  touch(ws: Workspace): void {
    this.activity.touch(ws);
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
    this.activity.markDirty(workspaceId, at);
  }

  /** What the next flush writes, taken (session-activity.ts). Workspace id → time. */
  takeActivity(now = this.deps.clock.now()): Map<string, number> {
    return this.activity.take(now);
  }

  /** Registers something beyond this layer that keeps sessions connected while it lasts (session-activity.ts). */
  addActivityExtender(extender: ActivityExtender): void {
    this.activity.addExtender(extender);
  }

  /** Records an open AttachSession stream of a session; returns the function that records its close (session-activity.ts). */
  attach(ws: Pick<Workspace, "sessionId" | "workspaceId">): () => void {
    return this.activity.attach(ws);
  }

  /** Number of open AttachSession streams of a session on this instance (connected while > 0). */
  attachedCount(sessionId: string): number {
    return this.activity.attachedCount(sessionId);
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

  /** A workspace in any lifecycle by its (stable) id, from the database; undefined when there is none. */
  workspaceById(workspaceId: string): Promise<Workspace | undefined> {
    return this.reads.workspaceById(workspaceId);
  }

  /** The lifecycle of each workspace (by id) that exists. */
  lifecyclesOf(workspaceIds: readonly string[]): Promise<Map<string, LifecycleName>> {
    return this.reads.lifecyclesOf(workspaceIds);
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

  /** A page of a repository's sessions in these lifecycles, oldest first, after `after` (registry-reads.ts). */
  listSessions(repoId: string, lifecycles: readonly LifecycleName[], after: SessionKey | undefined, limit: number): Promise<Workspace[]> {
    return this.reads.listSessions(repoId, lifecycles, after, limit);
  }

  /** `within`: the total counts only these repositories (a caller granted only some). */
  countActive(repoId: string | undefined, within?: readonly string[]): Promise<{ active: number; total: number }> {
    return this.reads.countActive(repoId, within);
  }

  /** The agents whose workspaces work (or worked) on a changeset: the only agents that may move it or join it. */
  agentsOfChangeset(changesetId: string, trx?: Tx): Promise<string[]> {
    return this.reads.agentsOfChangeset(changesetId, trx);
  }

  /** The workspaces of a changeset that hold an overlay (active, stranded), oldest first; NOT_FOUND when the changeset does not exist. */
  workspacesOfChangeset(changesetId: string): Promise<Workspace[]> {
    return this.reads.workspacesOfChangeset(changesetId);
  }

  /** The repository of a changeset; undefined when there is no such changeset. */
  repositoryOfChangeset(changesetId: string): Promise<string | undefined> {
    return this.reads.repositoryOfChangeset(changesetId);
  }

  /** A page of a repository's changesets in these states, newest created first, after `after` (registry-reads.ts). */
  listChangesets(repoId: string, states: readonly ChangesetStateName[], after: ChangesetKey | undefined, limit: number): Promise<Changeset[]> {
    return this.reads.listChangesets(repoId, states, after, limit);
  }

  /** A changeset as a review shows it: its row, history and every session it had (NOT_FOUND when it does not exist). */
  changesetReview(changesetId: string): Promise<ChangesetReview> {
    return this.reads.changesetReview(changesetId);
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
    this.live.admit(ws);
  }

  /** Forgets a live workspace (it was ended or stranded); its changeset goes with the last live workspace that references it. */
  drop(sessionId: string): Workspace | undefined {
    return this.live.drop(sessionId);
  }

  /** A Workspace of a row, holding the interned changeset (live-workspaces.ts). */
  workspaceFromRow(row: sqlRepo.WorkspaceRow): Workspace {
    return this.live.workspaceFromRow(row);
  }
}
