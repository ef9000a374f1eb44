/**
 * Who else touched a path: (repository, path) → the sessions whose overlay has it, with the
 * symbols they changed. DescribeOtherModifiers, ListFiles' modified_by_other, WriteFile's
 * conflicts and the STALE_OVERLAY check read it; each costs O(sessions that touched the path).
 *
 * Built lazily per repository from PostgreSQL (every instance's rows), then maintained from
 * events: this instance's commits at once (WorkspaceRegistry.onCommitted), every instance's
 * through the event hub (a few hundred ms later). Events of a repository whose load is in
 * flight are queued and applied after it, so nothing between the load's snapshot and its end
 * is lost; applying an event twice is harmless. Events arrive late, so every answer that must
 * hold across instances (DescribeOtherModifiers, a ListFiles page, a ReadFile, a write's checks)
 * first refreshes the entries of its paths from PostgreSQL (refreshed(): one indexed query).
 *
 * A changeset's state is ordered by its row's version (changesets.version, bumped by the statement
 * that changes the state), never by a timestamp: those come from each instance's clock. A
 * transition's event carries no version, so it makes the index read the row again (batched).
 *
 * Counted: active and stranded sessions (stranded work is pending work: it comes back on
 * resume) whose changeset is not terminal. Abandoned, destroyed and expired sessions leave.
 */
import type { Logger } from "pino";
import { isTerminal } from "../sessions/changeset-states.js";
import type { ChangesetStateName } from "../platform/schema.js";
import type { Db } from "../platform/database.js";
import { CoalescedLookup } from "../platform/coalesced-lookup.js";
import { toSeq } from "../platform/schema.js";
import { findChangesets, type ChangesetRow } from "../sessions/registry.repository.js";
import type { OtherModifierInfo } from "./overlay-port.js";
import * as sqlRepo from "./overlay.repository.js";

interface SessionMeta {
  sessionId: string;
  agentId: string;
  agentName: string;
  changesetId: string;
  lifecycle: "active" | "stranded";
}

interface Touch {
  /** Symbols the session changed in the file; "" = the file as a whole. */
  symbols: Set<string>;
  updatedAt: number;
}

export interface RepoIndex {
  readonly paths: Map<string, Map<string, Touch>>;
  readonly byWorkspace: Map<string, Set<string>>;
  readonly sessions: Map<string, SessionMeta>;
  readonly changesets: Map<string, ChangesetSeen>;
}

/** A changeset's state as last seen: `version` orders (changesets.version; -1 unknown), `at` is only reported. */
interface ChangesetSeen {
  state: ChangesetStateName;
  at: number;
  version: number;
}

/** An event as the index needs it (from a local EventInput or a stored Event). */
export interface IndexEvent {
  readonly kind: string;
  readonly repoId: string;
  readonly sessionId: string;
  readonly workspaceId: string;
  readonly changesetId: string;
  readonly at: number;
  readonly path?: string;
  readonly toState?: ChangesetStateName;
}

export interface TouchInput {
  readonly repoId: string;
  readonly workspaceId: string;
  readonly meta: SessionMeta;
  readonly path: string;
  /** The session's symbols of the file now (cumulative); undefined: the path left its overlay. */
  readonly symbols: readonly string[] | undefined;
  readonly at: number;
  readonly changesetState: ChangesetStateName;
  readonly changesetAt: number;
  /** The changeset's version as the writer's cache holds it (-1: unknown). */
  readonly changesetVersion: number;
}

export interface OtherTouch extends OtherModifierInfo {
  readonly workspaceId: string;
  readonly changesetId: string;
  /** When the other session's change of this path became what it is: its last write or its changeset's last transition. */
  readonly changedAt: number;
}

export class ModifiersIndex {
  private readonly repos = new Map<string, RepoIndex>();
  private readonly loading = new Map<string, { promise: Promise<RepoIndex>; queued: (() => void)[] }>();

  /** Changeset rows read again after a transition's event (one query for the transitions heard together). */
  private readonly heard: CoalescedLookup<string, ChangesetRow>;

  constructor(private readonly db: Db, private readonly logger: Logger) {
    this.heard = new CoalescedLookup((ids) => findChangesets(db, ids), { maxRunning: 2 });
  }

  /** Forgets everything (events were missed); repositories load again on next use. */
  reset(): void {
    this.repos.clear();
  }

  /** The index of a repository, loading it on first use. */
  async repo(repoId: string): Promise<RepoIndex> {
    const hit = this.repos.get(repoId);
    if (hit) return hit;
    const inFlight = this.loading.get(repoId);
    if (inFlight) return inFlight.promise;
    const entry = { promise: undefined as unknown as Promise<RepoIndex>, queued: [] as (() => void)[] };
    entry.promise = (async () => {
      try {
        const idx: RepoIndex = { paths: new Map(), byWorkspace: new Map(), sessions: new Map(), changesets: new Map() };
        for (const row of await sqlRepo.modifiersOfRepo(this.db, repoId)) applyRow(idx, row);
        this.repos.set(repoId, idx);
        for (const q of entry.queued) q();
        return idx;
      } finally {
        this.loading.delete(repoId);
      }
    })();
    this.loading.set(repoId, entry);
    return entry.promise;
  }

  /**
   * The repository's index with the given paths' entries checked against PostgreSQL first (one
   * indexed query): another instance's write or changeset transition is in the answer even
   * before its event arrives. Those paths' entries are replaced by the rows of live workspaces;
   * an entry this instance changed while the query ran (a local commit: newer than the query's
   * snapshot may be) is kept as it is.
   */
  async refreshed(repoId: string, paths: readonly string[]): Promise<RepoIndex> {
    const idx = await this.repo(repoId);
    if (paths.length === 0) return idx;
    const before = new Map<string, Map<string, { touch: Touch; at: number }>>();
    for (const p of new Set(paths)) {
      const touches = idx.paths.get(p);
      before.set(p, new Map([...(touches ?? [])].map(([w, t]) => [w, { touch: t, at: t.updatedAt }])));
    }
    const rows = await sqlRepo.modifiersOfPaths(this.db, repoId, [...before.keys()]);
    const now = this.repos.get(repoId);
    if (now !== idx) return now ?? this.repo(repoId); // reset meanwhile: loaded afresh
    const found = new Set<string>();
    for (const row of rows) {
      found.add(`${row.workspace_id}\0${row.path}`);
      const t = idx.paths.get(row.path)?.get(row.workspace_id);
      const was = before.get(row.path)?.get(row.workspace_id);
      // A local touch since the snapshot is at least as new as the row.
      if (t && (!was || was.touch !== t || was.at !== t.updatedAt)) {
        seeChangeset(idx, row.changeset_id, seenOfRow(row));
        continue;
      }
      applyRow(idx, row);
    }
    for (const [p, olds] of before) {
      for (const [w, was] of olds) {
        if (found.has(`${w}\0${p}`)) continue;
        const t = idx.paths.get(p)?.get(w);
        if (t === was.touch && t.updatedAt === was.at) removePath(idx, w, p);
      }
    }
    return idx;
  }

  /** Runs `fn` on the repository's index now if loaded, after its load if loading; not at all otherwise. */
  private withRepo(repoId: string, fn: (idx: RepoIndex) => void): void {
    const idx = this.repos.get(repoId);
    if (idx) return fn(idx);
    const inFlight = this.loading.get(repoId);
    if (inFlight) inFlight.queued.push(() => fn(this.repos.get(repoId)!));
  }

  /** A local write or delete, committed. */
  touch(t: TouchInput): void {
    this.withRepo(t.repoId, (idx) => {
      idx.sessions.set(t.workspaceId, { ...t.meta });
      seeChangeset(idx, t.meta.changesetId, { state: t.changesetState, at: t.changesetAt, version: t.changesetVersion });
      if (t.symbols === undefined) removePath(idx, t.workspaceId, t.path);
      else setTouch(idx, t.workspaceId, t.path, t.symbols, t.at);
    });
  }

  /**
   * An event of any instance. `local` events were already applied by touch() (file.*) and only
   * lifecycle and changeset changes matter; remote file.* events re-read the row.
   */
  apply(e: IndexEvent, local: boolean): void {
    if (e.kind === "changeset.transitioned") {
      // Changesets are shared across repositories' indexes only within their repository.
      this.withRepo(e.repoId, (idx) => {
        if (!idx.changesets.has(e.changesetId)) return;
        this.heard.get(e.changesetId).then(
          (row) => {
            const now = this.repos.get(e.repoId);
            if (row && now) seeChangeset(now, row.id, { state: row.state, at: row.updated_at.getTime(), version: Number(toSeq(row.version)) });
          },
          // Every answer refreshes its paths' rows (refreshed()), which carry the state and version.
          (err: unknown) => this.logger.warn({ err, changesetId: e.changesetId }, "modifiers index: could not read a transitioned changeset"),
        );
      });
      return;
    }
    if (!e.workspaceId) return;
    switch (e.kind) {
      case "session.stranded":
        this.withRepo(e.repoId, (idx) => {
          const s = idx.sessions.get(e.workspaceId);
          if (s) s.lifecycle = "stranded";
        });
        return;
      case "session.resumed":
        this.withRepo(e.repoId, (idx) => {
          const s = idx.sessions.get(e.workspaceId);
          if (s) {
            s.lifecycle = "active";
            s.sessionId = e.sessionId;
          }
        });
        return;
      case "session.abandoned":
      case "session.destroyed":
      case "session.expired":
        this.withRepo(e.repoId, (idx) => removeWorkspace(idx, e.workspaceId));
        return;
      case "file.written":
      case "file.deleted": {
        if (local || e.path === undefined) return;
        const path = e.path;
        this.withRepo(e.repoId, () => {
          void sqlRepo.modifiersOfWorkspacePath(this.db, e.workspaceId, path).then(
            (row) => {
              const idx = this.repos.get(e.repoId);
              if (!idx) return;
              if (row && (row.lifecycle === "active" || row.lifecycle === "stranded")) applyRow(idx, row);
              else removePath(idx, e.workspaceId, path);
            },
            (err: unknown) => this.logger.warn({ err, path }, "modifiers index: could not refresh a path"),
          );
        });
        return;
      }
      default:
        return;
    }
  }

  /** The other sessions (by workspace) that touched the path, in the order they first did. */
  others(idx: RepoIndex, path: string, exclude: { workspaceId?: string; sessionId?: string }): OtherTouch[] {
    const touches = idx.paths.get(path);
    if (!touches) return [];
    const out: OtherTouch[] = [];
    for (const [workspaceId, t] of touches) {
      if (workspaceId === exclude.workspaceId) continue;
      const s = idx.sessions.get(workspaceId);
      if (!s || s.sessionId === exclude.sessionId) continue;
      const cs = idx.changesets.get(s.changesetId);
      const state = cs?.state ?? "draft";
      if (isTerminal(state)) continue;
      const fileLevel = t.symbols.has("");
      out.push({
        workspaceId,
        sessionId: s.sessionId,
        agentId: s.agentId,
        agentName: s.agentName,
        symbols: fileLevel ? [] : [...t.symbols],
        changesetState: state,
        changesetId: s.changesetId,
        changedAt: Math.max(t.updatedAt, cs?.at ?? 0),
      });
    }
    return out;
  }

  /** Whether another session touched the path (ListFiles; no allocation). */
  touchedByOther(idx: RepoIndex, path: string, workspaceId: string): boolean {
    const touches = idx.paths.get(path);
    if (!touches) return false;
    for (const w of touches.keys()) {
      if (w === workspaceId) continue;
      const s = idx.sessions.get(w);
      if (s && !isTerminal(idx.changesets.get(s.changesetId)?.state ?? "draft")) return true;
    }
    return false;
  }
}

function applyRow(idx: RepoIndex, row: sqlRepo.ModifierRow): void {
  idx.sessions.set(row.workspace_id, {
    sessionId: row.session_id,
    agentId: row.agent_id,
    agentName: row.agent_name,
    changesetId: row.changeset_id,
    lifecycle: row.lifecycle === "stranded" ? "stranded" : "active",
  });
  seeChangeset(idx, row.changeset_id, seenOfRow(row));
  setTouch(idx, row.workspace_id, row.path, row.symbols, row.updated_at.getTime());
}

function seenOfRow(row: sqlRepo.ModifierRow): ChangesetSeen {
  return { state: row.cs_state, at: row.cs_updated_at.getTime(), version: Number(toSeq(row.cs_version)) };
}

/** The one rule of the index's changeset order: a state seen at a version no older than the one held. */
function seeChangeset(idx: RepoIndex, changesetId: string, seen: ChangesetSeen): void {
  const cs = idx.changesets.get(changesetId);
  if (!cs || cs.version <= seen.version) idx.changesets.set(changesetId, seen);
}

function setTouch(idx: RepoIndex, workspaceId: string, path: string, symbols: readonly string[], at: number): void {
  let touches = idx.paths.get(path);
  if (!touches) idx.paths.set(path, (touches = new Map()));
  const t = touches.get(workspaceId);
  if (t) {
    t.symbols = new Set(symbols);
    t.updatedAt = Math.max(t.updatedAt, at);
  } else {
    touches.set(workspaceId, { symbols: new Set(symbols), updatedAt: at });
  }
  let paths = idx.byWorkspace.get(workspaceId);
  if (!paths) idx.byWorkspace.set(workspaceId, (paths = new Set()));
  paths.add(path);
}

function removePath(idx: RepoIndex, workspaceId: string, path: string): void {
  const touches = idx.paths.get(path);
  if (touches) {
    touches.delete(workspaceId);
    if (touches.size === 0) idx.paths.delete(path);
  }
  idx.byWorkspace.get(workspaceId)?.delete(path);
}

function removeWorkspace(idx: RepoIndex, workspaceId: string): void {
  for (const path of idx.byWorkspace.get(workspaceId) ?? []) {
    const touches = idx.paths.get(path);
    if (!touches) continue;
    touches.delete(workspaceId);
    if (touches.size === 0) idx.paths.delete(path);
  }
  idx.byWorkspace.delete(workspaceId);
  idx.sessions.delete(workspaceId);
}

/**
 * The text of DescribeOtherModifiers, one clause per other session joined with "; ":
 * no symbols (the file as a whole) → "modified by agent-3"; one → "create_task modified by
 * agent-2"; two or three → "{a, b, c} modified by agent-2"; more → the first three and the
 * count of the rest: "{a, b, c, +2 more} modified by agent-2". Empty when nobody.
 */
export function describeText(mods: readonly OtherModifierInfo[]): string {
  return mods
    .map((m) => {
      const s = m.symbols;
      if (s.length === 0) return `modified by ${m.agentName}`;
      if (s.length === 1) return `${s[0]} modified by ${m.agentName}`;
      const shown = s.slice(0, 3).join(", ");
      return `{${shown}${s.length > 3 ? `, +${s.length - 3} more` : ""}} modified by ${m.agentName}`;
    })
    .join("; ");
}

/** The index's touches as the port reports them (WriteFile's conflicts, DescribeOtherModifiers). */
export function publicOthers(others: readonly OtherTouch[]): OtherModifierInfo[] {
  return others.map((o) => ({ sessionId: o.sessionId, agentId: o.agentId, agentName: o.agentName, symbols: o.symbols, changesetState: o.changesetState }));
}
