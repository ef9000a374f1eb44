/**
 * The registry's reads that go to the database whatever this instance holds live: pages of
 * sessions and changesets (all instances, any lifecycle), a changeset's review, and the facts
 * behind access checks. They share nothing with the live map but the objects it hands out (a
 * session held live here is answered with its live object), so they are kept out of the registry,
 * which stays the facade the other layers call (registry.ts).
 */
import type { Db } from "../platform/database.js";
import type { Tx } from "../platform/unit-of-work.js";
import type { ChangesetStateName, LifecycleName } from "../platform/schema.js";
import type { Changeset, Repository, Workspace } from "./workspace.js";
import * as sqlRepo from "./registry.repository.js";
import * as historyRepo from "./changeset-history.repository.js";
import { changesetFromRow, changesetNotFound } from "./changesets.js";

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

/** What these reads need of the registry (an interface: the registry imports this module). */
export interface ReadRegistry {
  readonly db: Db;
  repository(id: string): Promise<Repository>;
  liveWorkspace(sessionId: string): Workspace | undefined;
  workspaceFromRow(row: sqlRepo.WorkspaceRow): Workspace;
}

export class RegistryReads {
  constructor(private readonly registry: ReadRegistry) {}

  private get db(): Db {
    return this.registry.db;
  }

  /** A workspace in any lifecycle by its (stable) id, from the database; undefined when there is none. */
  async workspaceById(workspaceId: string): Promise<Workspace | undefined> {
    const row = await sqlRepo.findWorkspaceById(this.db, workspaceId);
    return row ? this.registry.workspaceFromRow(row) : undefined;
  }

  /** The lifecycle of each workspace (by id) that exists. */
  async lifecyclesOf(workspaceIds: readonly string[]): Promise<Map<string, LifecycleName>> {
    const rows = await this.db.selectFrom("workspaces").select(["id", "lifecycle"]).where("id", "in", workspaceIds).execute();
    return new Map(rows.map((r) => [r.id, r.lifecycle]));
  }

  /**
   * A page of a repository's sessions in these lifecycles, oldest first, from the database (all
   * instances), after the session with key `after` (sessionKey of the last of the previous page).
   */
  async listSessions(repoId: string, lifecycles: readonly LifecycleName[], after: SessionKey | undefined, limit: number): Promise<Workspace[]> {
    await this.registry.repository(repoId);
    const rows = await sqlRepo.listWorkspacesPage(this.db, repoId, lifecycles, after && { createdAt: new Date(after[0]), id: after[1] }, limit);
    return rows.map((row) => this.shown(row));
  }

  /** `within`: the total counts only these repositories (a caller granted only some). */
  async countActive(repoId: string | undefined, within?: readonly string[]): Promise<{ active: number; total: number }> {
    if (repoId !== undefined) await this.registry.repository(repoId);
    return sqlRepo.countActive(this.db, repoId, within);
  }

  /** The agents whose workspaces work (or worked) on a changeset: the only agents that may move it or join it. `trx`: read in that transaction. */
  agentsOfChangeset(changesetId: string, trx?: Tx): Promise<string[]> {
    return sqlRepo.agentsOfChangeset(trx ?? this.db, changesetId);
  }

  /** The workspaces of a changeset that hold an overlay (active, stranded), oldest first; NOT_FOUND when the changeset does not exist. */
  async workspacesOfChangeset(changesetId: string): Promise<Workspace[]> {
    if (!(await sqlRepo.findChangeset(this.db, changesetId))) throw changesetNotFound(changesetId);
    return (await sqlRepo.workspacesOfChangeset(this.db, changesetId)).map((row) => this.registry.liveWorkspace(row.session_id) ?? this.registry.workspaceFromRow(row));
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
    await this.registry.repository(repoId);
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
      sessions: sessions.map((w) => this.shown(w)),
    };
  }

  /**
   * A session as a read shows it: the row's facts, read now (another instance may have stranded,
   * ended or rebased it a moment ago, and this one hears of it later), with the activity of the
   * live object held here for the same workspace, which runs ahead of the row until it is flushed.
   */
  private shown(row: sqlRepo.WorkspaceRow): Workspace {
    const ws = this.registry.workspaceFromRow(row);
    const live = this.registry.liveWorkspace(row.session_id);
    if (live?.workspaceId === row.id && live.lastActiveAt > ws.lastActiveAt) ws.lastActiveAt = live.lastActiveAt;
    return ws;
  }
}
