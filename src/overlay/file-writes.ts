/**
 * The write path (WriteFile, DeleteFile, and the turn scheduler's capture through the same
 * OverlayPort) carries every rule a change must pass — size, expected hash, STALE_OVERLAY, the
 * symbol claims — and the one transaction that stores it; kept apart from the reads, which need
 * none of that, and shared with claiming for the SYMBOL_LOCKED refusal.
 */
import type { Logger } from "pino";
import { isTerminal } from "../sessions/changeset-states.js";
import type { Clock } from "../platform/clock.js";
import { BerthError, failedPrecondition, QuotaExceeded } from "../platform/errors.js";
import { assertActive, type Workspace } from "../sessions/workspace.js";
import { insertEvents, type EventInput } from "../platform/outbox.js";
import { fileChangeEnum, symbolChangeEnum } from "../platform/proto-enums.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";
import type { ChangesetStateName } from "../platform/schema.js";
import type { Tx } from "../platform/unit-of-work.js";
import * as claimsRepo from "../claims/claims.repository.js";
import { sha256Hex, type BaseTree, type GitBase } from "./git-base.js";
import { publicOthers, type ModifiersIndex, type OtherTouch, type RepoIndex } from "./modifiers-index.js";
import { CACHE_CONTENT_BYTES, cachedFileOf, type CachedFile, type OverlayCache, type WorkspaceOverlay } from "./overlay-cache.js";
import type { OverlayContext, OverlaySettings } from "./overlay-context.js";
import type { SymbolChangeInfo } from "./overlay-port.js";
import * as sqlRepo from "./overlay.repository.js";
import { assertNormalPath, symlinkOnPath } from "./paths.js";
import { isFileInView, shapeConflict } from "./path-shape.js";
import { changesetTerminal, checkRow, fileNotFound, pathShape, traversesSymlink } from "./refusals.js";
import type { SymbolDiffer } from "./symbols/pool.js";
import type { SymbolChange } from "./symbols/index.js";

/** The pool, or the write's transaction when deciding again under its locks (never a second connection then). */
type SqlExecutor = Parameters<typeof sqlRepo.lastRead>[0];

/** Changeset states after which another session's change makes a blind write stale. */
const REVIEW_STATES: ReadonlySet<ChangesetStateName> = new Set(["submitted", "verifying", "approved"]);

/** What a write or delete did. */
export interface ChangeResult {
  readonly hash: string | null;
  readonly change: sqlRepo.ChangeName;
  readonly symbols: SymbolChangeInfo[];
  readonly conflicts: ReturnType<typeof publicOthers>;
}

/** One call's question. */
interface Ask {
  readonly ws: Workspace;
  readonly path: string;
  readonly content: Uint8Array | null;
  readonly expectedHash: string | undefined;
  readonly declared: readonly string[];
  /** Where this instance reads the repository's objects (repository/locations.ts); null: no git repository. */
  readonly gitDir: string | null;
  /** The base commit's tree (the file-or-directory check). */
  readonly tree: BaseTree;
  readonly idx: RepoIndex;
  readonly signal: AbortSignal | undefined;
  /** A turn's capture as its session ends (overlay-port.ts WriteInput.ending). */
  readonly ending: boolean;
  readonly early: EarlyDiff | undefined;
}

/**
 * The symbol diff against the cached row, started before the cache is checked against
 * PostgreSQL: the parse runs on a worker while the round trip is in flight. Taken only when the
 * checked version has the same hash (the same bytes); else the diff is made again.
 */
interface EarlyDiff {
  readonly hash: string | null;
  readonly changes: Promise<SymbolChange[]>;
}

/** The path a decision is made on: the overlay's row, or (none) the base commit's file. */
interface PathState {
  readonly existing: CachedFile | undefined;
  readonly current: Uint8Array | undefined;
  /** The base's hash when there is no row. */
  readonly baseHash?: string | null;
}

type Decision =
  | { readonly kind: "unchanged"; readonly result: ChangeResult }
  | {
      readonly kind: "store";
      readonly believed: sqlRepo.BelievedRow;
      readonly dropRow: boolean;
      readonly newHash: string | null;
      readonly change: sqlRepo.ChangeName;
      readonly baseHash: string | null;
      readonly symbols: SymbolChangeInfo[];
      readonly wanted: string[];
      readonly cumulative: string[];
      readonly others: readonly OtherTouch[];
    };

/**
 * The write statement found the row changed since the decision (another instance wrote the path
 * between our check and our statement): nothing was written. Decided again once, then refused.
 */
export class RowMoved extends BerthError {
  constructor(path: string) {
    super("aborted", "CONCURRENT_WRITE", `${path} was changed by another writer while this write was stored; retry`, { path });
  }
}

export class SymbolLocked extends Error {
  constructor(readonly path: string, readonly blocked: sqlRepo.ClaimRow[], readonly wanted: readonly string[]) {
    super("symbol locked");
  }
}

/**
 * Storage. Every write is one transaction: the workspace row locked FOR NO KEY UPDATE and its
 * changeset FOR SHARE (a strand, abandon or terminal transition waits for it, then releases what
 * it claimed; another instance's write of the same workspace waits its turn), the path's claim
 * lock, the claims (all or nothing), the overlay row, the workspace's overlay_version and the
 * events file.written / claim.acquired. The RPC returns after the commit. A refused claim rolls
 * all of it back and then records claim.conflict in a transaction of its own.
 *
 * Several instances. The decision is made on this instance's cache, checked against the
 * workspace's overlay_version first; the write statement then applies only if the path's row is
 * still what the decision believed (compare-and-set in SQL). If another instance wrote the path
 * in between, nothing was written: the row is read again under the write's locks and the write
 * decided again on it (expected_hash → HASH_MISMATCH naming the current hash; a blind write is
 * applied on top of the fresh row).
 *
 * Whole-file unit. A file Berth cannot split into symbols (no grammar, too large, unparsable or
 * binary) is claimed as a whole: the claim's symbol is "" and it conflicts with every claim of
 * another session on that path (and any symbol claim conflicts with another's "" claim).
 */
/** How a change is made: a turn's capture as its session ends; the call's signal. */
export interface ChangeOptions {
  readonly ending?: boolean;
  readonly signal?: AbortSignal | undefined;
}

/** The named symbols a change adds and removes (the extracted ones: not the file unit, not a declared name). */
function definedBy(symbols: readonly SymbolChangeInfo[]): { added: string[]; removed: string[] } {
  const named = symbols.filter((s) => s.kind !== "file" && s.kind !== "declared");
  return { added: named.filter((s) => s.change === "added").map((s) => s.name), removed: named.filter((s) => s.change === "deleted").map((s) => s.name) };
}

/** The call's own abort reason (CANCELLED / DEADLINE_EXCEEDED) when it is a BerthError; else CANCELLED. */
function abandonedWrite(path: string, signal: AbortSignal): BerthError {
  const reason: unknown = signal.reason;
  if (reason instanceof BerthError) return reason;
  return new BerthError("cancelled", "CANCELLED", `the call was cancelled before its change of ${path} was stored; nothing was written`, { path });
}

export class FileWrites {
  private readonly registry: WorkspaceRegistry;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly settings: OverlaySettings;
  private readonly git: GitBase;
  private readonly index: ModifiersIndex;
  private readonly cache: OverlayCache;
  private readonly symbols: SymbolDiffer;

  constructor(ctx: OverlayContext) {
    this.registry = ctx.registry;
    this.clock = ctx.clock;
    this.logger = ctx.logger;
    this.settings = ctx.settings;
    this.git = ctx.git;
    this.index = ctx.index;
    this.cache = ctx.cache;
    this.symbols = ctx.symbols;
  }

  checkSize(path: string, size: number): void {
    if (size > this.settings.maxFileBytes) {
      throw new BerthError("resource_exhausted", "FILE_TOO_LARGE", `${path}: ${size} bytes is over the limit of ${this.settings.maxFileBytes}`, {
        path,
        size_bytes: String(size),
        limit_bytes: String(this.settings.maxFileBytes),
      });
    }
  }

  /** A write (content) or a delete (null) of one path. */
  async change(ws: Workspace, path: string, content: Uint8Array | null, expectedHash: string | undefined, declared: readonly string[], opts: ChangeOptions = {}): Promise<ChangeResult> {
    assertNormalPath("path", path);
    const ending = opts.ending === true;
    // A turn's capture as its session is stranded: the locked row decides (checkRow), not memory.
    if (!ending) assertActive(ws);
    if (isTerminal(ws.changeset.state)) throw changesetTerminal(ws.changeset.id, ws.changeset.state);
    const since = performance.now();
    const ov = await this.cache.overlay(ws);
    return this.cache.serialised(ov, async () => {
      // Every write acknowledged before this call (on any instance) is in the cache we decide on;
      // the path's index entries are checked against PostgreSQL (another instance's write or
      // transition counts at once). Independent reads: one round trip's wait, not two.
      const early = this.earlyDiff(ov, path, content);
      const [, repo, idx] = await Promise.all([this.cache.validate(ws, ov, since), this.registry.repository(ws.repoId), this.index.refreshed(ws.repoId, [path])]);
      // Below a committed link a change would land where the link points (materialise follows
      // no link either: this is the answer the caller can act on) — unless this workspace
      // deleted the link, which makes the path a directory of its own.
      const gitDir = await this.registry.locations.withCommit(repo, ws.baseCommit);
      const tree = await this.git.tree(gitDir, ws.baseCommit);
      const link = symlinkOnPath(path, tree.symlinks, (l) => ov.files.get(l)?.hash === null);
      if (link !== undefined) throw traversesSymlink(path, link);
      const ask: Ask = { ws, path, content, expectedHash, declared, gitDir, tree, idx, signal: opts.signal, ending, early };
      this.checkShape(ask, ov);
      const first = await this.decide(ask, ov, await this.cachedState(ask, ov));
      if (first.kind === "unchanged") return first.result;
      try {
        return await this.store(ask, ov, () => Promise.resolve(first));
      } catch (err) {
        if (!(err instanceof RowMoved)) throw err;
        this.logger.debug({ sessionId: ws.sessionId, path }, "overlay row changed by another writer since the check; deciding again under the locks");
      }
      // Another instance changed the path between our check and our statement: decide again on
      // the row as it is now, read under the write's locks (no other change of this workspace's
      // overlay can commit in between), and store that. A second miss is an error.
      return this.store(ask, ov, async (trx) => {
        const row = await sqlRepo.readOverlayRow(trx, ws.workspaceId, path);
        const file = row ? cachedFileOf(row, row.content) : undefined;
        this.cache.takeRow(ov, path, file);
        return this.decide(ask, ov, row && file ? { existing: file, current: row.content ?? undefined } : await this.baseState(ask), trx);
      });
    });
  }

  /**
   * A path of the view is a file or a directory, never both (path-shape.ts): a write of a file
   * where the view has files below it, or below a file of the view, is refused. A delete never is.
   */
  private checkShape(ask: Ask, ov: WorkspaceOverlay): void {
    if (ask.content === null) return;
    const clash = shapeConflict(ask.path, ask.tree, ov.files, ov.dirs);
    if (clash) throw pathShape(ask.path, clash);
  }

  private earlyDiff(ov: WorkspaceOverlay, path: string, content: Uint8Array | null): EarlyDiff | undefined {
    const cached = ov.files.get(path);
    if (content === null || cached === undefined || cached.content === undefined) return undefined;
    const changes = this.symbols.diff(path, cached.content ?? undefined, content);
    changes.catch(() => {}); // awaited by decide, unless the checked row is another version
    return { hash: cached.hash, changes };
  }

  /** The path as this instance's (checked) cache has it. */
  private async cachedState(ask: Ask, ov: WorkspaceOverlay): Promise<PathState> {
    const v = await this.cache.view(ask.ws, ov, ask.path);
    return v ? { existing: v.file, current: v.content ?? undefined } : this.baseState(ask);
  }

  /** A path the overlay has no row for: the base commit's file, if any. */
  private async baseState(ask: Ask): Promise<PathState> {
    const base = await this.git.read(ask.gitDir, ask.ws.baseCommit, ask.path);
    return { existing: undefined, current: base?.content, baseHash: base?.hash ?? null };
  }

  /**
   * Every rule a change must pass, on one view of the path: expected_hash, FILE_NOT_FOUND,
   * "nothing changes", STALE_OVERLAY; then the symbol diff and what to store.
   */
  private async decide(ask: Ask, ov: WorkspaceOverlay, state: PathState, db: SqlExecutor = this.registry.db): Promise<Decision> {
    const { ws, path, content, expectedHash, declared, idx } = ask;
    const { existing, current } = state;
    const currentHash = existing ? existing.hash : (state.baseHash ?? null);
    const baseHash = existing ? existing.baseHash : (state.baseHash ?? null);
    if (expectedHash !== undefined && expectedHash !== (currentHash ?? "")) {
      throw new BerthError("aborted", "HASH_MISMATCH", `${path} does not have the expected hash`, {
        path,
        expected_hash: expectedHash,
        current_hash: currentHash ?? "",
      });
    }
    if (content === null && currentHash === null) throw fileNotFound(path);
    const newHash = content === null ? null : sha256Hex(content);
    const others = this.index.others(idx, path, { workspaceId: ws.workspaceId });
    if (newHash !== null && newHash === currentHash) {
      // Nothing changes: nothing is stored, claimed or announced.
      return { kind: "unchanged", result: { hash: newHash, change: baseHash === null ? "added" : "modified", symbols: [], conflicts: publicOthers(others) } };
    }
    // A write naming the current content's hash (checked above) overwrites knowingly: the explicit override.
    if (expectedHash === undefined) await this.checkStale(db, ws, ov, path, existing, others);

    const diff = await (ask.early !== undefined && ask.early.hash === currentHash ? ask.early.changes : this.symbols.diff(path, current, content ?? undefined));
    const symbols: SymbolChangeInfo[] = diff.map((d) => ({ name: d.name, kind: d.kind, change: d.change }));
    const claimNames = new Set(diff.map((d) => (d.kind === "file" ? "" : d.name)));
    for (const d of declared) {
      if (claimNames.has(d)) continue;
      claimNames.add(d);
      symbols.push({ name: d, kind: "declared", change: "modified" });
    }
    // A parsed file whose change touches no symbol (imports, comments) claims nothing.
    const wanted = [...claimNames];
    const change: sqlRepo.ChangeName = content === null ? "deleted" : baseHash === null ? "added" : "modified";
    return {
      kind: "store",
      believed: existing ? { exists: true, sha256: existing.hash } : { exists: false },
      // A delete of a file the base does not have removes the row: there is nothing to hide.
      dropRow: content === null && baseHash === null,
      newHash,
      change,
      baseHash,
      symbols,
      wanted,
      cumulative: [...new Set([...(existing?.symbols ?? []), ...wanted])],
      others,
    };
  }

  /**
   * One transaction: the row and path locks; then claims + overlay row + file event + the
   * overlay_version bump in one statement, conditional on no blocking claim and on the row being
   * what the decision believed; then the claim.acquired event (it names the claims the statement
   * inserted). `decision` runs after the locks (the retry decides there). RowMoved: the row was
   * not what the decision believed; nothing was written.
   */
  private async store(ask: Ask, ov: WorkspaceOverlay, decision: (trx: Tx) => Promise<Decision>): Promise<ChangeResult> {
    const { ws, path, content } = ask;
    const now = this.clock.now();
    const holder = { workspaceId: ws.workspaceId, sessionId: ws.sessionId, agentId: ws.agentId, agentName: ws.agentName };
    let committed: { d: Extract<Decision, { kind: "store" }>; out: sqlRepo.WriteOutcome; state: ChangesetStateName } | { unchanged: ChangeResult };
    try {
      committed = await this.registry.uow.run(async ({ trx, prepare, record }) => {
        const row = await claimsRepo.lockForWrite(trx, ws.workspaceId, [claimsRepo.claimLockKey(ws.repoId, path)], "overlay");
        // Under the workspace's lock: a caller that gave up (cancel, deadline) may already have
        // sent its next write, which must not be overwritten by this late one. Nothing is stored.
        if (ask.signal?.aborted) throw abandonedWrite(path, ask.signal);
        const state = checkRow(ws, row, ask.ending);
        // Another instance changed the overlay since the cache was checked: a file or directory it
        // made since is looked for under the lock (nothing else can change the overlay now).
        if (content !== null && Number(row!.overlay_version) !== ov.version && !isFileInView(path, ask.tree, ov.files)) {
          await this.cache.reloadIn(trx, ws, ov);
          this.checkShape(ask, ov);
        }
        const d = await decision(trx);
        if (d.kind === "unchanged") return { unchanged: d.result };
        const fileEvent: EventInput = {
          kind: content === null ? "file.deleted" : "file.written",
          ...this.eventBase(ws, now),
          payload: {
            case: "fileChanged",
            value: {
              path,
              change: fileChangeEnum(d.change),
              symbols: d.symbols.map((s) => ({ name: s.name, kind: s.kind, change: symbolChangeEnum(s.change) })),
              newHash: d.newHash ?? "",
            },
          },
        };
        const out = await sqlRepo.writeWithClaims(
          trx,
          { repoId: ws.repoId, path, symbols: d.wanted, holder, at: new Date(now), defined: definedBy(d.symbols) },
          d.dropRow
            ? { drop: true, workspaceId: ws.workspaceId, path }
            : { workspaceId: ws.workspaceId, repoId: ws.repoId, path, content, sha256: d.newHash, change: d.change, baseHash: d.baseHash, symbols: d.cumulative, at: new Date(now) },
          d.believed,
          prepare(fileEvent),
          // A stranded session holds no claims (its strand released them): checked, not taken.
          !ask.ending,
        );
        // A stale belief first: claims blocked on a stale diff may not be the ones the fresh one wants.
        if (!out.believed || (!out.applied && out.blocked.length === 0)) throw new RowMoved(path);
        // Over the quota: the statement's change is rolled back with the transaction.
        if (this.quotaOn()) this.checkQuota(out.usage, ws, path, content, d.dropRow);
        if (out.blocked.length > 0) throw new SymbolLocked(path, out.blocked, d.wanted);
        if (out.inserted.length > 0) record({ kind: "claim.acquired", ...this.eventBase(ws, now), payload: { case: "claimChanged", value: { path, symbols: out.inserted } } });
        return { d, out, state };
      });
    } catch (err) {
      if (err instanceof SymbolLocked) throw await this.refuse(ws, err);
      throw err;
    }
    if ("unchanged" in committed) return committed.unchanged;
    // Committed: the cache and the index follow.
    const { d, out, state } = committed;
    const symbols = out.symbols ?? d.cumulative;
    this.cache.committed(
      ov,
      path,
      d.dropRow
        ? undefined
        : {
            hash: d.newHash,
            change: d.change,
            baseHash: d.baseHash,
            symbols,
            updatedAt: now,
            size: content?.byteLength ?? null,
            content: content === null ? null : content.byteLength <= CACHE_CONTENT_BYTES ? content : undefined,
          },
      out.version!,
    );
    this.index.touch({
      repoId: ws.repoId,
      workspaceId: ws.workspaceId,
      meta: { sessionId: ws.sessionId, agentId: ws.agentId, agentName: ws.agentName, changesetId: ws.changeset.id, lifecycle: ask.ending ? "stranded" : "active" },
      path,
      symbols: d.dropRow ? undefined : symbols,
      at: now,
      changesetState: state,
      changesetAt: ws.changeset.updatedAt,
      changesetVersion: ws.changeset.version,
    });
    return { hash: d.newHash, change: d.change, symbols: d.symbols, conflicts: publicOthers(d.others) };
  }

  /**
   * OVERLAY_QUOTA_EXCEEDED: the overlay after this change would hold more rows than
   * BERTH_MAX_OVERLAY_FILES or more content bytes than BERTH_MAX_OVERLAY_BYTES. Read from
   * PostgreSQL inside the write's transaction, after the workspace row lock every overlay change
   * takes, so writes on any number of instances see each other's commits and the sum cannot be
   * overrun by two writes deciding at once. A change that grows neither measure (a smaller
   * rewrite, a delete of an added file) always passes, so an overlay over a lowered limit can
   * still shrink. Rows count deletions of base files too (tombstones): they are stored paths.
   * The write statement returns the overlay as it was before its change: the workspace row's
   * counters (overlay_files_count, overlay_bytes, which the same statement moves by the row's
   * difference) and the path's row, so a write's cost does not grow with the overlay; a refusal
   * rolls the change and the counters back.
   */
  private checkQuota(use: sqlRepo.OverlayUsage, ws: Workspace, path: string, content: Uint8Array | null, dropRow: boolean): void {
    const maxFiles = this.settings.maxOverlayFiles ?? 0;
    const maxBytes = this.settings.maxOverlayBytes ?? 0;
    const files = use.files - use.pathFiles + (dropRow ? 0 : 1);
    const bytes = use.bytes - use.pathBytes + (content?.byteLength ?? 0);
    const over: { limit: string; max: number; now: number; after: number; unit: string }[] = [];
    if (maxFiles > 0 && files > maxFiles && files > use.files) over.push({ limit: "BERTH_MAX_OVERLAY_FILES", max: maxFiles, now: use.files, after: files, unit: "files" });
    if (maxBytes > 0 && bytes > maxBytes && bytes > use.bytes) over.push({ limit: "BERTH_MAX_OVERLAY_BYTES", max: maxBytes, now: use.bytes, after: bytes, unit: "bytes" });
    const first = over[0];
    if (first === undefined) return;
    throw new QuotaExceeded(
      "OVERLAY_QUOTA_EXCEEDED",
      `${path}: workspace ${ws.workspaceId}'s overlay holds ${first.now} ${first.unit}; this change would make it ${first.after}, over the limit of ${first.max} (${first.limit})`,
      {
        path,
        workspace_id: ws.workspaceId,
        session_id: ws.sessionId,
        quota: first.limit,
        limit: String(first.max),
        used: String(first.now),
        requested: String(first.after),
        overlay_files: String(use.files),
        overlay_bytes: String(use.bytes),
      },
      over.map((o) => ({ subject: `workspace:${ws.workspaceId}`, description: `${o.now} of ${o.max} ${o.unit} used; this change would make ${o.after} (${o.limit})` })),
    );
  }

  private quotaOn(): boolean {
    return (this.settings.maxOverlayFiles ?? 0) > 0 || (this.settings.maxOverlayBytes ?? 0) > 0;
  }

  private eventBase(ws: Workspace, at: number) {
    return { repoId: ws.repoId, sessionId: ws.sessionId, workspaceId: ws.workspaceId, agentId: ws.agentId, changesetId: ws.changeset.id, occurredAt: at };
  }

  /**
   * STALE_OVERLAY: another session's change of this path went up for review (its changeset
   * entered SUBMITTED, VERIFYING or APPROVED, or it wrote the path while there) after this
   * session last saw the path. Seen: its last ReadFile of the path or its own last write of it;
   * a path never read nor written was never seen, whatever the session's start (the reference's
   * rule: the session's base does not hold the other's change, so a blind write would overwrite
   * it). The override is explicit: expected_hash of the current content. A read is kept in this instance's memory,
   * and in PostgreSQL (overlay_reads) when another session had touched the path at read time
   * (file-reads.ts): a ReadFile on any instance counts. The stored read is looked up (one
   * primary-key lookup) only when the memory alone would refuse.
   */
  private async checkStale(db: SqlExecutor, ws: Workspace, ov: WorkspaceOverlay, path: string, existing: CachedFile | undefined, others: readonly OtherTouch[]): Promise<void> {
    if (others.length === 0) return;
    let seen = Math.max(ov.reads?.get(path) ?? 0, existing?.updatedAt ?? 0);
    let looked = false;
    for (const o of others) {
      if (o.changesetId === ws.changeset.id || !REVIEW_STATES.has(o.changesetState as ChangesetStateName)) continue;
      if (o.changedAt > seen && !looked) {
        looked = true;
        const stored = await sqlRepo.lastRead(db, ws.workspaceId, path);
        if (stored) seen = Math.max(seen, stored.getTime());
      }
      if (o.changedAt > seen) {
        throw failedPrecondition("STALE_OVERLAY", `${path} was changed by ${o.agentName}, whose changeset is ${o.changesetState.toUpperCase()}, after this session last read it; read it again before writing`, {
          path,
          other_session_id: o.sessionId,
          other_agent_name: o.agentName,
          other_changeset_id: o.changesetId,
          other_changeset_state: o.changesetState.toUpperCase(),
          changed_at: new Date(o.changedAt).toISOString(),
          last_read_at: new Date(seen).toISOString(),
        });
      }
    }
  }

  /** After a rollback for a held claim: records claim.conflict and says who holds what. */
  async refuse(ws: Workspace, e: SymbolLocked): Promise<BerthError> {
    const first = e.blocked[0]!;
    const now = this.clock.now();
    try {
      await this.registry.uow.statement([
        {
          kind: "claim.conflict",
          ...this.eventBase(ws, now),
          payload: {
            case: "claimChanged",
            value: { path: e.path, symbols: [...new Set(e.blocked.map((b) => b.symbol))], holderSessionId: first.session_id, holderAgentName: first.agent_name },
          },
        },
      ], (db, rows) => insertEvents(rows).execute(db));
    } catch (err) {
      this.logger.warn({ err }, "could not record claim.conflict");
    }
    const what = first.symbol === "" ? `${e.path} (the file as a whole)` : `${first.symbol} in ${e.path}`;
    return failedPrecondition("SYMBOL_LOCKED", `${what} is claimed by ${first.agent_name} (session ${first.session_id}) since ${first.acquired_at.toISOString()}`, {
      path: e.path,
      symbol: first.symbol,
      holder_session_id: first.session_id,
      holder_agent_id: first.agent_id,
      holder_agent_name: first.agent_name,
      since: first.acquired_at.toISOString(),
      locked_symbols: [...new Set(e.blocked.map((b) => b.symbol))].join(","),
    });
  }
}
