/**
 * The registry of session workspaces. Live workspaces are held in memory for fast reads; every
 * change is written through to the database (with its events) before the call returns, so a
 * restart loses nothing that was acknowledged. Reads of sessions that are not live here
 * (stranded, ended, or owned by another instance) go to the database.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { canTransition, isTerminal, sourcesOf } from "./changeset-states.js";
import type { Clock } from "../platform/clock.js";
import { BerthError, failedPrecondition, invalidArgument, notFound } from "../platform/errors.js";
import type { Changeset, Repository, Workspace } from "./workspace.js";
import type { EventInput } from "../platform/outbox.js";
import type { UnitOfWork } from "../platform/unit-of-work.js";
import { changesetStateEnum, modeEnum } from "../platform/proto-enums.js";
import type { Db } from "../platform/database.js";
import type { ChangesetStateName, LifecycleName, ModeName } from "../platform/schema.js";
import { checkGitRepository, resolveCommit } from "./git-source.js";
import * as sqlRepo from "./registry.repository.js";
import { registryFollower } from "./coherence.js";
import { SessionHooks } from "./session-hooks.js";

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
}

export interface CreateWorkspaceInput {
  readonly repoId: string;
  readonly intent: string;
  readonly baseCommit: string;
  readonly mode: ModeName;
  readonly ttlSeconds: number | undefined;
  readonly agentId: string;
  readonly agentName: string | undefined;
  readonly sessionId: string | undefined;
  readonly changesetId: string | undefined;
}

export const DEFAULT_PERSISTENT_TTL_SECONDS = 86_400;
const AUTO_AGENT_NAME = /^agent-\d+$/;

export class WorkspaceRegistry {
  private readonly repos = new Map<string, Repository>();
  /** Active workspaces owned by this instance, by session id. */
  private readonly live = new Map<string, Workspace>();
  /** Changesets of live workspaces, shared between the workspaces that reference them. */
  private readonly changesets = new Map<string, Changeset>();
  private readonly newId: () => string;
  /** Live workspaces touched since the last activity flush (LifecycleManager.flushActivity). */
  private dirty = new Set<Workspace>();
  /** Open AttachSession streams per session: a session is connected while it has one. */
  private readonly attached = new Map<string, number>();
  /** What happens beyond this layer when sessions end or changesets move (claims, overlay register it). */
  readonly hooks = new SessionHooks();

  constructor(private readonly deps: RegistryDeps) {
    this.newId = deps.newId ?? randomUUID;
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
    for (const row of await sqlRepo.listRepositories(this.db)) this.repos.set(row.id, repositoryFromRow(row));
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

  async registerRepository(name: string, sourcePath: string | undefined): Promise<Repository> {
    const resolved = sourcePath ? await checkGitRepository(sourcePath) : null;
    const repo: Repository = { id: this.newId(), name, sourcePath: resolved, createdAt: this.deps.clock.now() };
    try {
      await sqlRepo.insertRepository(this.db, {
        id: repo.id,
        name: repo.name,
        source_path: repo.sourcePath,
        created_at: new Date(repo.createdAt),
      });
    } catch (err) {
      if (sqlRepo.isUniqueViolation(err)) {
        throw new BerthError("already_exists", "REPOSITORY_EXISTS", `a repository named "${name}" is already registered`, { name });
      }
      throw err;
    }
    this.repos.set(repo.id, repo);
    return repo;
  }

  async listRepositories(): Promise<Repository[]> {
    const rows = await sqlRepo.listRepositories(this.db);
    for (const row of rows) if (!this.repos.has(row.id)) this.repos.set(row.id, repositoryFromRow(row));
    return rows.map(repositoryFromRow);
  }

  async repository(id: string): Promise<Repository> {
    const cached = this.repos.get(id);
    if (cached) return cached;
    const row = await sqlRepo.findRepository(this.db, id);
    if (!row) throw repositoryNotFound(id);
    const repo = repositoryFromRow(row);
    this.repos.set(id, repo);
    return repo;
  }

  // ---- workspaces ---------------------------------------------------------------------

  async createWorkspace(input: CreateWorkspaceInput): Promise<Workspace> {
    const repo = await this.repository(input.repoId);
    if (input.agentName !== undefined && AUTO_AGENT_NAME.test(input.agentName)) {
      throw invalidArgument([{ field: "agent_name", reason: "RESERVED_NAME", description: "names of the form agent-N are assigned by Berth; leave agent_name empty to get one" }]);
    }
    if (input.mode === "ephemeral" && input.ttlSeconds !== undefined) {
      throw invalidArgument([{ field: "ttl_seconds", reason: "PERSISTENT_ONLY", description: "only persistent workspaces have a TTL" }]);
    }
    let baseCommit = input.baseCommit;
    if (repo.sourcePath) baseCommit = await resolveCommit(repo.sourcePath, baseCommit || "HEAD");
    else if (!baseCommit) {
      throw invalidArgument([{ field: "base_commit", reason: "REQUIRED", description: "required: the repository has no source_path to take HEAD from" }]);
    }

    const now = this.deps.clock.now();
    const row: sqlRepo.NewWorkspaceRow = {
      id: this.newId(),
      session_id: input.sessionId ?? this.newId(),
      repo_id: repo.id,
      agent_id: input.agentId,
      agent_name: input.agentName ?? "",
      changeset_id: input.changesetId ?? this.newId(),
      intent: input.intent,
      base_commit: baseCommit,
      mode: input.mode,
      expires_at: input.mode === "persistent" ? new Date(now + (input.ttlSeconds ?? DEFAULT_PERSISTENT_TTL_SECONDS) * 1000) : null,
      created_at: new Date(now),
      last_active_at: new Date(now),
      owner_instance: this.deps.instanceId ?? null,
    };
    const created = (agentName: string): EventInput => ({
        kind: "session.created",
        repoId: repo.id,
        sessionId: row.session_id,
        workspaceId: row.id,
        agentId: row.agent_id,
        changesetId: row.changeset_id,
        occurredAt: now,
        payload: { case: "sessionCreated", value: { agentName, mode: modeEnum(input.mode), intent: input.intent, baseCommit } },
    });
    const draft = (): sqlRepo.ChangesetRow => ({ id: row.changeset_id, repo_id: repo.id, state: "draft", reason: "", created_at: row.created_at, updated_at: row.created_at });

    let result: { changeset: sqlRepo.ChangesetRow; agentName: string };
    try {
      if (input.changesetId === undefined && input.agentName === undefined) {
        // The common case, in one statement (registry.repository.ts createAutoNamedWorkspace).
        const changeset = draft();
        const agentName = await this.uow.statement(
          [created("")],
          (db, [event]) => sqlRepo.createAutoNamedWorkspace(db, row, changeset, event!),
          (name) => name !== undefined,
        );
        if (agentName === undefined) throw repositoryNotFound(repo.id);
        result = { changeset, agentName };
      } else {
        result = await this.uow.run(async ({ trx, record }) => {
          let changeset: sqlRepo.ChangesetRow;
          if (input.changesetId !== undefined) {
            const found = await sqlRepo.findChangeset(trx, input.changesetId, "share");
            if (!found || found.repo_id !== repo.id) {
              throw notFound("CHANGESET_NOT_FOUND", `changeset ${input.changesetId} does not exist in repository ${repo.id}`, { changeset_id: input.changesetId });
            }
            if (isTerminal(found.state)) {
              throw failedPrecondition("CHANGESET_TERMINAL", `changeset ${found.id} is ${found.state.toUpperCase()}`, { changeset_id: found.id, state: found.state.toUpperCase() });
            }
            changeset = found;
          } else {
            changeset = draft();
            await sqlRepo.insertChangeset(trx, changeset);
          }
          let agentName = input.agentName;
          if (agentName === undefined) {
            const n = await sqlRepo.takeAgentNumber(trx, repo.id);
            if (n === undefined) throw repositoryNotFound(repo.id);
            agentName = `agent-${n}`;
          }
          await sqlRepo.insertWorkspace(trx, { ...row, agent_name: agentName });
          record(created(agentName));
          return { changeset, agentName };
        });
      }
    } catch (err) {
      if (sqlRepo.isUniqueViolation(err)) {
        throw new BerthError("already_exists", "SESSION_EXISTS", `session ${row.session_id} already has a workspace`, { session_id: row.session_id });
      }
      throw err;
    }

    const ws: Workspace = {
      workspaceId: row.id,
      sessionId: row.session_id,
      repoId: repo.id,
      agentId: row.agent_id,
      agentName: result.agentName,
      changeset: this.internChangeset(result.changeset),
      intent: row.intent,
      baseCommit,
      mode: row.mode,
      expiresAt: row.expires_at?.getTime() ?? null,
      createdAt: now,
      lastActiveAt: now,
      lifecycle: "active",
      lifecycleReason: "",
      strandedAt: null,
      resumedFrom: null,
    };
    this.admit(ws);
    return ws;
  }

  /** The workspace of a session in any lifecycle state; NOT_FOUND when the session never existed. */
  async getWorkspace(sessionId: string): Promise<Workspace> {
    const live = this.live.get(sessionId);
    if (live) return live;
    const row = await sqlRepo.findWorkspaceBySession(this.db, sessionId);
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
   * The workspace of a session that may be used: active. Stranded, abandoned, destroyed and
   * resumed sessions answer FAILED_PRECONDITION with the facts a client needs to act.
   */
  async requireActive(sessionId: string): Promise<Workspace> {
    const ws = this.live.get(sessionId) ?? (await this.getWorkspace(sessionId));
    assertActive(ws);
    return ws;
  }

  /**
   * Records activity of a session: in memory at once; the lifecycle's activity flusher writes
   * last_active_at of every touched workspace in one batched UPDATE every few seconds.
   */
  touch(ws: Workspace): void {
    ws.lastActiveAt = this.deps.clock.now();
    if (ws.lifecycle === "active") this.dirty.add(ws);
  }

  /** Marks a workspace for the next activity flush again (a failed flush puts its batch back). */
  markDirty(ws: Workspace): void {
    if (ws.lifecycle === "active") this.dirty.add(ws);
  }

  /** The workspaces touched since the last call (the flusher writes them). */
  takeDirty(): Workspace[] {
    if (this.dirty.size === 0) return [];
    const out = [...this.dirty];
    this.dirty = new Set();
    return out;
  }

  /** Records an open AttachSession stream of a session; returns the function that records its close. */
  attach(sessionId: string): () => void {
    this.attached.set(sessionId, (this.attached.get(sessionId) ?? 0) + 1);
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      const n = (this.attached.get(sessionId) ?? 1) - 1;
      if (n > 0) this.attached.set(sessionId, n);
      else this.attached.delete(sessionId);
    };
  }

  /** Number of open AttachSession streams of a session (connected while > 0). */
  attachedCount(sessionId: string): number {
    return this.attached.get(sessionId) ?? 0;
  }

  /** Brings a cached changeset up to date with a row read or written elsewhere. */
  refreshChangeset(row: sqlRepo.ChangesetRow): Changeset {
    const cs = this.internChangeset(row);
    // Rows given here were just read or written: they win even at an equal updated_at.
    if (row.updated_at.getTime() >= cs.updatedAt) {
      cs.state = row.state;
      cs.reason = row.reason;
      cs.updatedAt = row.updated_at.getTime();
    }
    return cs;
  }

  /** A changeset transition (made here or by another instance): the cached state follows, never backwards. */
  noteChangesetState(changesetId: string, state: ChangesetStateName, reason: string, at: number): void {
    const cs = this.changesets.get(changesetId);
    if (!cs || at < cs.updatedAt) return;
    cs.state = state;
    cs.reason = reason;
    cs.updatedAt = at;
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
      this.refreshChangeset({ id: row.changeset_id, repo_id: row.repo_id, state: row.cs_state, reason: row.cs_reason, created_at: row.cs_created_at, updated_at: row.cs_updated_at });
    }
  }

  /** The lifecycle of each workspace (by id) that exists. */
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

  /** Active and stranded sessions of a repository, oldest first, from the database (all instances). */
  async listSessions(repoId: string): Promise<Workspace[]> {
    await this.repository(repoId);
    const rows = await sqlRepo.listWorkspacesByLifecycle(this.db, ["active", "stranded"], repoId);
    return rows.map((row) => this.live.get(row.session_id) ?? this.workspaceFromRow(row));
  }

  async countActive(repoId: string | undefined): Promise<{ active: number; total: number }> {
    if (repoId !== undefined) await this.repository(repoId);
    return sqlRepo.countActive(this.db, repoId);
  }

  /** The agents whose workspaces work on a changeset: the only agents that may move it. */
  agentsOfChangeset(changesetId: string): Promise<string[]> {
    return sqlRepo.agentsOfChangeset(this.db, changesetId);
  }

  async transitionChangeset(changesetId: string, to: ChangesetStateName, reason: string): Promise<Changeset> {
    const now = this.deps.clock.now();
    const outcome = await this.uow.run(async (change) => {
      const { trx } = change;
      const current = await sqlRepo.findChangeset(trx, changesetId);
      if (!current) throw notFound("CHANGESET_NOT_FOUND", `changeset ${changesetId} does not exist`, { changeset_id: changesetId });
      if (isTerminal(current.state)) {
        throw failedPrecondition("CHANGESET_TERMINAL", `changeset ${changesetId} is ${current.state.toUpperCase()}, a terminal state`, {
          changeset_id: changesetId,
          state: current.state.toUpperCase(),
        });
      }
      if (!canTransition(current.state, to)) throw invalidTransition(changesetId, current.state, to);
      // The compare-and-set: of two racing transitions from the same state, one updates, one finds nothing.
      const row = await sqlRepo.casChangesetState(trx, changesetId, sourcesOf(to), to, reason, new Date(now));
      if (!row || row.state !== to) {
        const again = await sqlRepo.findChangeset(trx, changesetId);
        throw invalidTransition(changesetId, again?.state ?? current.state, to);
      }
      await this.hooks.changesetMoved(change, { changesetId, to, at: now });
      change.record({
        kind: "changeset.transitioned",
        repoId: row.repo_id,
        changesetId,
        occurredAt: now,
        reason,
        payload: { case: "changesetTransitioned", value: { fromState: changesetStateEnum(current.state), toState: changesetStateEnum(to) } },
      });
      return { row };
    });
    const cached = this.changesets.get(changesetId);
    if (cached) {
      cached.state = outcome.row.state;
      cached.reason = outcome.row.reason;
      cached.updatedAt = outcome.row.updated_at.getTime();
      return cached;
    }
    return changesetFromRow(outcome.row);
  }

  // ---- shared with the lifecycle ------------------------------------------------------

  admit(ws: Workspace): void {
    this.live.set(ws.sessionId, ws);
  }

  /** Forgets a live workspace (it was ended or stranded); its changeset goes when nothing references it. */
  drop(sessionId: string): Workspace | undefined {
    const ws = this.live.get(sessionId);
    if (!ws) return undefined;
    this.live.delete(sessionId);
    this.dirty.delete(ws);
    const cs = ws.changeset;
    for (const other of this.live.values()) if (other.changeset === cs) return ws;
    this.changesets.delete(cs.id);
    return ws;
  }

  workspaceFromRow(row: sqlRepo.WorkspaceRow): Workspace {
    const changeset = this.internChangeset({
      id: row.changeset_id,
      repo_id: row.repo_id,
      state: row.cs_state,
      reason: row.cs_reason,
      created_at: row.cs_created_at,
      updated_at: row.cs_updated_at,
    });
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

  private internChangeset(row: sqlRepo.ChangesetRow): Changeset {
    const cached = this.changesets.get(row.id);
    if (cached) {
      if (row.updated_at.getTime() > cached.updatedAt) {
        cached.state = row.state;
        cached.reason = row.reason;
        cached.updatedAt = row.updated_at.getTime();
      }
      return cached;
    }
    const cs = changesetFromRow(row);
    this.changesets.set(cs.id, cs);
    return cs;
  }
}

export function assertActive(ws: Workspace): void {
  switch (ws.lifecycle) {
    case "active":
      return;
    case "stranded":
      throw failedPrecondition("SESSION_STRANDED", `session ${ws.sessionId} is stranded; resume it with ResumeSession`, {
        session_id: ws.sessionId,
        workspace_id: ws.workspaceId,
        changeset_id: ws.changeset.id,
        stranded_at: new Date(ws.strandedAt ?? 0).toISOString(),
        reason: ws.lifecycleReason,
      });
    case "abandoned":
      throw failedPrecondition("SESSION_ABANDONED", `session ${ws.sessionId} was abandoned`, {
        session_id: ws.sessionId,
        workspace_id: ws.workspaceId,
        changeset_id: ws.changeset.id,
        reason: ws.lifecycleReason,
      });
    case "destroyed":
      throw failedPrecondition("SESSION_DESTROYED", `session ${ws.sessionId} was destroyed`, {
        session_id: ws.sessionId,
        workspace_id: ws.workspaceId,
        reason: ws.lifecycleReason,
      });
  }
}

function repositoryNotFound(repoId: string): BerthError {
  return notFound("REPOSITORY_NOT_FOUND", `repository ${repoId} is not registered`, { repo_id: repoId });
}

function invalidTransition(changesetId: string, from: ChangesetStateName, to: ChangesetStateName): BerthError {
  return failedPrecondition("INVALID_TRANSITION", `changeset ${changesetId} cannot move from ${from.toUpperCase()} to ${to.toUpperCase()}`, {
    changeset_id: changesetId,
    from_state: from.toUpperCase(),
    to_state: to.toUpperCase(),
  });
}

function repositoryFromRow(row: sqlRepo.RepositoryRow): Repository {
  return { id: row.id, name: row.name, sourcePath: row.source_path, createdAt: row.created_at.getTime() };
}

function changesetFromRow(row: sqlRepo.ChangesetRow): Changeset {
  return {
    id: row.id,
    repoId: row.repo_id,
    state: row.state,
    reason: row.reason,
    createdAt: row.created_at.getTime(),
    updatedAt: row.updated_at.getTime(),
  };
}
