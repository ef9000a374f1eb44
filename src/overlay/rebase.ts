/**
 * RebaseWorkspace (issue 15): moves a workspace to a new base commit, merging each overlay path
 * three-way (old base, new base, the workspace's version): all of them in one batch of git's own
 * merge (scratch-git.ts mergeFiles: `merge-tree`, as `git merge-file -p --diff3` would give each). Decided outside
 * any transaction, then stored in one unit of work that locks the workspace row and checks that
 * neither the overlay (overlay_version) nor the base moved meanwhile: the rows, the new
 * base_commit, the overlay_version bump (every instance's cache reloads) and workspace.rebased
 * commit together. The registry refreshes a cached Workspace's baseCommit from the row on every
 * lookup, so another instance answers from the new base at once.
 *
 * Conflicts are left for the agent in git's convention: a CONTENT or ADD_ADD conflict puts the
 * conflict-marker version (`--diff3`: the workspace's lines, the old base's, the new base's) in
 * the overlay, which ReadFile answers; the new base's own version is the base. A modify/delete
 * keeps the workspace's version (MODIFY_DELETE) or its deletion (DELETE_MODIFY); a binary file
 * both changed keeps the workspace's version (BINARY).
 */
import { sql } from "kysely";
import { lockForWrite } from "../claims/claims.repository.js";
import type { Clock } from "../platform/clock.js";
import { BerthError, failedPrecondition } from "../platform/errors.js";
import { RepositoryLocations } from "../repository/locations.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";
import type { Workspace } from "../sessions/workspace.js";
import type { Diffs } from "./diffs.js";
import { noSource } from "./diffs.js";
import { sha256Hex, type GitBase } from "./git-base.js";
import type { OverlayContext } from "./overlay-context.js";
import * as sqlRepo from "./overlay.repository.js";
import { checkRow } from "./refusals.js";
import { OverlayRowMoved } from "./overlay-stream.js";
import { ScratchRepo, type MergedFile, type MergeJob } from "./scratch-git.js";

export type RebaseConflictKind = "CONTENT" | "MODIFY_DELETE" | "DELETE_MODIFY" | "ADD_ADD" | "BINARY";

export interface RebaseResult {
  readonly workspace: Workspace;
  readonly oldBaseCommit: string;
  readonly merged: readonly string[];
  readonly conflicts: readonly { path: string; kind: RebaseConflictKind }[];
  readonly dropped: readonly string[];
}

/** What the rebase does to one overlay row. */
type RowPlan =
  | { path: string; op: "drop" }
  | { path: string; op: "set"; content: Uint8Array | null; change: sqlRepo.ChangeName; baseHash: string | null };

const ATTEMPTS = 3;

/** A path decided without a merge: its row, and whether it was dropped or left in conflict. */
interface Outcome {
  readonly row: RowPlan;
  readonly dropped?: boolean;
  readonly conflict?: RebaseConflictKind;
}

/** Git's test for binary content: a NUL byte in the first 8000. */
function looksBinary(c: Uint8Array): boolean {
  return c.subarray(0, 8000).includes(0);
}

function same(a: Uint8Array | null | undefined, b: Uint8Array | null | undefined): boolean {
  if (!a || !b) return (a ?? null) === (b ?? null);
  return Buffer.compare(a, b) === 0;
}

export class Rebases {
  private readonly registry: WorkspaceRegistry;
  private readonly clock: Clock;
  private readonly git: GitBase;

  constructor(
    ctx: OverlayContext,
    private readonly diffs: Diffs,
  ) {
    this.registry = ctx.registry;
    this.clock = ctx.clock;
    this.git = ctx.git;
  }

  async rebase(ws0: Workspace, onto: string): Promise<RebaseResult> {
    const repo = await this.registry.repository(ws0.repoId);
    if (!RepositoryLocations.hasGit(repo)) throw noSource(ws0.repoId);
    // On a git server, `onto: "main"` is the server's main now (the mirror fetched first).
    const target = await this.registry.locations.resolve(repo, onto, "onto");
    for (let attempt = 1; ; attempt++) {
      const ws = await this.registry.getWorkspace(ws0.sessionId);
      const version = await sqlRepo.overlayVersion(this.registry.db, ws.workspaceId);
      const oldBase = ws.baseCommit;
      try {
        const plan = oldBase === target ? { rows: [], merged: [], conflicts: [], dropped: [] } : await this.plan((await this.registry.locations.withCommit(repo, oldBase))!, oldBase, target, await this.diffs.contents(ws));
        await this.store(ws, version, oldBase, target, plan);
        // The overlay cache reloads on the bumped overlay_version (keeping the recorded reads STALE_OVERLAY needs).
        ws.baseCommit = target;
        return { workspace: ws, oldBaseCommit: oldBase, merged: plan.merged, conflicts: plan.conflicts, dropped: plan.dropped };
      } catch (err) {
        const moved = err instanceof Moved || err instanceof OverlayRowMoved;
        if (moved && attempt < ATTEMPTS) continue;
        if (moved) throw new BerthError("aborted", "OVERLAY_CHANGING", `the workspace's overlay kept changing during the rebase; retry`, { session_id: ws.sessionId });
        throw err;
      }
    }
  }

  private async plan(
    sourcePath: string,
    oldBase: string,
    newBase: string,
    entries: ReadonlyMap<string, { content: Uint8Array | null }>,
  ): Promise<{ rows: RowPlan[]; merged: string[]; conflicts: { path: string; kind: RebaseConflictKind }[]; dropped: string[] }> {
    const [oldTree, newTree] = await Promise.all([this.git.tree(sourcePath, oldBase), this.git.tree(sourcePath, newBase)]);
    /** Each path's outcome in path order; a three-way merge's once the batch of merges is back. */
    const outcomes: (Outcome | { path: string; merge: MergeJob; theirs: Uint8Array; newHash: string; added: boolean })[] = [];
    const jobs: MergeJob[] = [];
    for (const [path, e] of entries) {
      const oldOid = oldTree.blobs.get(path);
      const newOid = newTree.blobs.get(path);
      // The new base's content comes through the long-lived cat-file of git-base.ts (no process per file).
      const theirs = newOid ? (await this.git.read(sourcePath, newBase, path))?.content : undefined;
      const newHash = theirs ? sha256Hex(theirs) : null;
      const ours = e.content;
      const keep = (content: Uint8Array | null): RowPlan => ({ path, op: "set", content, change: content === null ? "deleted" : theirs ? "modified" : "added", baseHash: newHash });
      // The new base already is what the workspace made (or both deleted it): nothing left to carry.
      if (same(ours, theirs ?? null)) {
        outcomes.push({ row: { path, op: "drop" }, dropped: true });
        continue;
      }
      // The base did not change the path: the workspace's version stands over the new base.
      if (oldOid === newOid) {
        outcomes.push({ row: keep(ours) });
        continue;
      }
      if (ours === null) {
        outcomes.push(theirs === undefined ? { row: { path, op: "drop" }, dropped: true } : { row: keep(null), conflict: "DELETE_MODIFY" });
        continue;
      }
      if (theirs === undefined) {
        outcomes.push({ row: keep(ours), conflict: "MODIFY_DELETE" });
        continue;
      }
      const base = oldOid ? (await this.git.read(sourcePath, oldBase, path))?.content : undefined;
      if (looksBinary(ours) || looksBinary(theirs) || (base !== undefined && looksBinary(base))) {
        outcomes.push({ row: keep(ours), conflict: "BINARY" });
        continue;
      }
      const job: MergeJob = { path, ours, baseOid: oldOid, theirsOid: newOid! };
      jobs.push(job);
      outcomes.push({ path, merge: job, theirs, newHash: newHash!, added: oldOid === undefined });
    }
    // Every three-way merge of the rebase in one batch: a fixed number of git processes (scratch-git.ts).
    const results = jobs.length === 0 ? new Map<string, MergedFile>() : await ScratchRepo.with(sourcePath, (scratch) => scratch.mergeFiles(jobs, [`workspace`, `old base ${oldBase.slice(0, 12)}`, `new base ${newBase.slice(0, 12)}`]));
    const rows: RowPlan[] = [];
    const merged: string[] = [];
    const dropped: string[] = [];
    const conflicts: { path: string; kind: RebaseConflictKind }[] = [];
    for (const o of outcomes) {
      if ("row" in o) {
        rows.push(o.row);
        if (o.dropped) dropped.push(o.row.path);
        if (o.conflict) conflicts.push({ path: o.row.path, kind: o.conflict });
        continue;
      }
      const m = results.get(o.path)!;
      if (same(m.content, o.theirs)) {
        rows.push({ path: o.path, op: "drop" });
        dropped.push(o.path);
        continue;
      }
      rows.push({ path: o.path, op: "set", content: m.content, change: "modified", baseHash: o.newHash });
      if (m.conflicts) conflicts.push({ path: o.path, kind: o.added ? "ADD_ADD" : "CONTENT" });
      else merged.push(o.path);
    }
    return { rows, merged, conflicts, dropped };
  }

  private async store(ws: Workspace, version: number, oldBase: string, newBase: string, plan: { rows: RowPlan[]; merged: string[]; conflicts: { path: string; kind: string }[] }): Promise<void> {
    const now = this.clock.now();
    await this.registry.uow.run(async (change) => {
      const trx = change.trx;
      const row = await lockForWrite(trx, ws.workspaceId, [], "overlay");
      checkRow(ws, row);
      const cur = await sql<{ base_commit: string; v: string | number }>`SELECT base_commit, overlay_version AS v FROM workspaces WHERE id = ${ws.workspaceId}::uuid`.execute(trx);
      const c = cur.rows[0];
      if (!c || c.base_commit !== oldBase || Number(c.v) !== version) throw new Moved();
      // A running turn's environment holds the old base, and its capture would write old-base
      // content over the merge. (BeginTurn does not take the workspace row: a turn inserted in the
      // same instant as this commit is not seen — docs/overlay.md, limits.)
      const running = await sql<{ id: string }>`SELECT id FROM turns WHERE workspace_id = ${ws.workspaceId}::uuid AND state = 'running' LIMIT 1`.execute(trx);
      if (running.rows[0]) {
        throw failedPrecondition("TURN_IN_PROGRESS", `session ${ws.sessionId} has a running turn ${running.rows[0].id}; end it before rebasing`, { session_id: ws.sessionId, turn_id: running.rows[0].id });
      }
      const at = new Date(now);
      for (const p of plan.rows) {
        if (p.op === "drop") {
          await sql`DELETE FROM overlay_files WHERE workspace_id = ${ws.workspaceId}::uuid AND path = ${p.path}`.execute(trx);
          continue;
        }
        const bytes = p.content === null ? null : Buffer.from(p.content.buffer, p.content.byteOffset, p.content.byteLength);
        await sql`UPDATE overlay_files SET content = ${bytes}::bytea, sha256 = ${p.content === null ? null : sha256Hex(p.content)}::text, change = ${p.change}::text,
                    base_hash = ${p.baseHash}::text, updated_at = ${at}::timestamptz
                  WHERE workspace_id = ${ws.workspaceId}::uuid AND path = ${p.path}`.execute(trx);
      }
      // The counters are set from the rows once (the rebase rewrote them one by one; it touches every row anyway).
      await sql`UPDATE workspaces SET base_commit = ${newBase}, overlay_version = overlay_version + 1, ${sqlRepo.recountedOverlay(ws.workspaceId)} WHERE id = ${ws.workspaceId}::uuid`.execute(trx);
      change.record({
        kind: "workspace.rebased",
        repoId: ws.repoId,
        sessionId: ws.sessionId,
        workspaceId: ws.workspaceId,
        agentId: ws.agentId,
        changesetId: ws.changeset.id,
        occurredAt: now,
        payload: { case: "workspaceRebased", value: { oldBaseCommit: oldBase, newBaseCommit: newBase, merged: plan.merged, conflicted: plan.conflicts.map((x) => x.path) } },
      });
    });
  }
}

/** The workspace's overlay or base moved between the plan and its storage: planned again. */
class Moved extends Error {
  constructor() {
    super("moved");
  }
}
