/**
 * The workspace overlay (issue 5; docs/overlay.md): each session's changes over its base commit,
 * the symbol claims its writes take, and who else touched a file.
 *
 * Storage. Every write is one transaction: the workspace and its changeset locked FOR SHARE
 * (a strand, abandon or terminal transition waits for it, then releases what it claimed), the
 * path's claim lock, the claims (all or nothing), the overlay row and the events file.written /
 * claim.acquired. The RPC returns after the commit. A refused claim rolls all of it back and then
 * records claim.conflict in a transaction of its own.
 *
 * Memory. The in-memory overlay of a workspace is a cache made on its first use (never at
 * startup: 100,000 idle workspaces cost nothing here): the rows' metadata, and the content of
 * files up to CACHE_CONTENT_BYTES once written or read; larger content is read from
 * PostgreSQL when needed. It is dropped when the workspace leaves this instance (strand,
 * abandon, destroy) and rebuilt from the rows on the next use (resume, restart).
 *
 * Whole-file unit. A file Berth cannot split into symbols (no grammar, too large, unparsable or
 * binary) is claimed as a whole: the claim's symbol is "" and it conflicts with every claim of
 * another session on that path (and any symbol claim conflicts with another's "" claim).
 */
import type { Logger } from "pino";
import { isTerminal } from "../sessions/changeset-states.js";
import type { Clock } from "../platform/clock.js";
import { BerthError, failedPrecondition, notFound } from "../platform/errors.js";
import type { Workspace } from "../sessions/workspace.js";
import { insertEvents, type CommittedEvent, type EventInput } from "../platform/outbox.js";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { changesetStateName, fileChangeEnum, symbolChangeEnum } from "../platform/proto-enums.js";
import { assertActive, type WorkspaceRegistry } from "../sessions/registry.js";
import type { ChangesetStateName } from "../platform/schema.js";
import { claimEvents } from "../claims/claim-events.js";
import * as claimsRepo from "../claims/claims.repository.js";
import { endedLifecycle } from "../sessions/session-hooks.js";
import { GitBase, comparePaths, sha256Hex } from "./git-base.js";
import { describeText, ModifiersIndex, type IndexEvent, type OtherTouch } from "./modifiers-index.js";
import type {
  DeleteInput,
  DeleteResult,
  OtherModifierInfo,
  OverlayEntry,
  OverlayPort,
  SymbolChangeInfo,
  WriteInput,
  WriteResult,
} from "./overlay-port.js";
import * as sqlRepo from "./overlay.repository.js";
import { diffSymbolsOrFile } from "./symbols/index.js";

/** Content up to this size stays in the cache after a write or read. */
const CACHE_CONTENT_BYTES = 256 * 1024;
/** Changeset states after which another session's change makes a blind write stale. */
const REVIEW_STATES: ReadonlySet<ChangesetStateName> = new Set(["submitted", "verifying", "approved"]);

export interface OverlaySettings {
  /** BERTH_MAX_FILE_BYTES */
  readonly maxFileBytes: number;
}

export interface OverlayDeps {
  readonly registry: WorkspaceRegistry;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly settings: OverlaySettings;
}

interface CachedFile {
  /** null: a deletion tombstone. */
  hash: string | null;
  change: sqlRepo.ChangeName;
  baseHash: string | null;
  symbols: string[];
  updatedAt: number;
  size: number | null;
  /** undefined: not in memory (read from PostgreSQL). */
  content: Uint8Array | null | undefined;
}

interface WorkspaceOverlay {
  readonly files: Map<string, CachedFile>;
  /** Last ReadFile per path (epoch ms); made on the first read. */
  reads: Map<string, number> | undefined;
  /** Serialises this workspace's writes (expected_hash and the symbol diff read the cache). */
  lock: Promise<unknown>;
}

export interface ReadResult {
  readonly content: Uint8Array;
  readonly hash: string;
  readonly source: "overlay" | "base";
}

export interface ListedFile {
  readonly path: string;
  readonly source: "overlay" | "base";
  readonly change: "added" | "modified" | undefined;
  readonly modifiedByOther: boolean;
}

export interface ClaimInfo {
  readonly repoId: string;
  readonly path: string;
  readonly symbol: string;
  readonly sessionId: string;
  readonly agentId: string;
  readonly agentName: string;
  readonly acquiredAt: number;
}

class SymbolLocked extends Error {
  constructor(readonly path: string, readonly blocked: sqlRepo.ClaimRow[], readonly wanted: readonly string[]) {
    super("symbol locked");
  }
}

function textOf(content: Uint8Array | undefined): string | undefined {
  if (content === undefined) return undefined;
  // Binary content (a NUL byte) has no symbols: decoding it would only waste the parser's time.
  if (content.includes(0)) return "\u0000binary";
  return Buffer.from(content.buffer, content.byteOffset, content.byteLength).toString("utf8");
}

export class OverlayService implements OverlayPort {
  private readonly registry: WorkspaceRegistry;
  private readonly clock: Clock;
  private readonly logger: Logger;
  readonly settings: OverlaySettings;
  readonly git: GitBase;
  readonly index: ModifiersIndex;
  /** By workspace id. */
  private readonly caches = new Map<string, Promise<WorkspaceOverlay>>();

  constructor(deps: OverlayDeps) {
    this.registry = deps.registry;
    this.clock = deps.clock;
    this.logger = deps.logger;
    this.settings = deps.settings;
    this.git = new GitBase(deps.settings.maxFileBytes);
    this.index = new ModifiersIndex(deps.registry.db, deps.logger);
    deps.registry.uow.addFollower("overlay", {
      apply: (e) => this.applyEvent(e),
      // Missed events: caches and the index are rebuilt from the rows on their next use.
      resync: async () => {
        this.caches.clear();
        this.index.reset();
      },
    });
    // A workspace that ends for good takes its overlay with it; a stranded one keeps it for the resume.
    deps.registry.hooks.onExit(async (change, exit) => {
      if (exit.to !== "stranded") await sqlRepo.deleteOverlaysOf(change.trx, exit.workspaceIds);
    });
  }

  close(): void {
    this.git.close();
  }

  /**
   * A committed event of any instance: drop the caches of workspaces that left, keep the
   * modifiers index current (this instance's own file events were applied by the write itself).
   */
  private applyEvent(e: CommittedEvent): void {
    if (e.workspaceId && endedLifecycle(e.kind)) this.caches.delete(e.workspaceId);
    const at = e.occurredAt ? timestampMs(e.occurredAt) : this.clock.now();
    const local = e.workspaceId !== "" && this.registry.liveWorkspace(e.sessionId)?.workspaceId === e.workspaceId;
    this.index.apply(indexEventOf(e.kind, e.repoId, e.sessionId, e.workspaceId, e.changesetId, at, e.payload as PayloadLike), local);
    if (e.kind === "session.resumed" && local) {
      // The resumed session is usable at once: its overlay is read back from the rows now.
      const ws = this.registry.liveWorkspace(e.sessionId)!;
      void this.rehydrate(ws).catch((err: unknown) => this.logger.warn({ err, sessionId: e.sessionId }, "overlay rehydration failed; retried on first use"));
    }
  }

  // ---- the cache ------------------------------------------------------------------------

  private overlay(ws: Workspace): Promise<WorkspaceOverlay> {
    const hit = this.caches.get(ws.workspaceId);
    if (hit) return hit;
    const p = (async () => {
      const files = new Map<string, CachedFile>();
      for (const row of await sqlRepo.listOverlayMeta(this.registry.db, ws.workspaceId)) {
        files.set(row.path, {
          hash: row.sha256,
          change: row.change,
          baseHash: row.base_hash,
          symbols: row.symbols,
          updatedAt: row.updated_at.getTime(),
          size: row.size,
          content: row.change === "deleted" ? null : undefined,
        });
      }
      return { files, reads: undefined, lock: Promise.resolve() } satisfies WorkspaceOverlay;
    })();
    this.caches.set(ws.workspaceId, p);
    p.catch(() => {
      if (this.caches.get(ws.workspaceId) === p) this.caches.delete(ws.workspaceId);
    });
    return p;
  }

  /** Loads the overlay of a (resumed) workspace ahead of its first call. */
  async rehydrate(ws: Workspace): Promise<number> {
    this.caches.delete(ws.workspaceId);
    return (await this.overlay(ws)).files.size;
  }

  /** Number of workspaces whose overlay is cached (tests, metrics). */
  get cachedWorkspaces(): number {
    return this.caches.size;
  }

  private async contentOf(ws: Workspace, path: string, f: CachedFile): Promise<Uint8Array | null> {
    if (f.content !== undefined) return f.content;
    const c = await sqlRepo.readOverlayContent(this.registry.db, ws.workspaceId, path);
    if (c === undefined) throw new BerthError("internal", "OVERLAY_ROW_MISSING", `the overlay row of ${path} is missing`);
    if (c !== null && c.byteLength <= CACHE_CONTENT_BYTES) f.content = c;
    return c;
  }

  private async serialised<T>(ov: WorkspaceOverlay, work: () => Promise<T>): Promise<T> {
    const run = ov.lock.then(work, work);
    ov.lock = run.catch(() => undefined);
    return run;
  }

  // ---- OverlayPort ----------------------------------------------------------------------

  async writeFile(input: WriteInput): Promise<WriteResult> {
    const { workspace: ws, path, content } = input;
    this.checkSize(path, content.byteLength);
    const r = await this.change(ws, path, content, input.expectedHash, input.declaredSymbols ?? []);
    return { newHash: r.hash!, change: r.change === "added" ? "added" : "modified", symbols: r.symbols, conflicts: r.conflicts };
  }

  async deleteFile(input: DeleteInput): Promise<DeleteResult> {
    const r = await this.change(input.workspace, input.path, null, input.expectedHash, []);
    return { symbols: r.symbols, conflicts: r.conflicts };
  }

  async entries(ws: Workspace): Promise<readonly OverlayEntry[]> {
    const ov = await this.overlay(ws);
    const out: OverlayEntry[] = [];
    for (const path of [...ov.files.keys()].sort(comparePaths)) {
      const f = ov.files.get(path)!;
      out.push({ path, content: await this.contentOf(ws, path, f), hash: f.hash });
    }
    return out;
  }

  async readBase(ws: Workspace, path: string): Promise<Uint8Array | undefined> {
    const repo = await this.registry.repository(ws.repoId);
    return (await this.git.read(repo.sourcePath, ws.baseCommit, path))?.content;
  }

  // ---- writes ---------------------------------------------------------------------------

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
  private async change(ws: Workspace, path: string, content: Uint8Array | null, expectedHash: string | undefined, declared: readonly string[]) {
    assertActive(ws);
    if (isTerminal(ws.changeset.state)) throw changesetTerminal(ws.changeset.id, ws.changeset.state);
    const ov = await this.overlay(ws);
    return this.serialised(ov, async () => {
      const repo = await this.registry.repository(ws.repoId);
      const idx = await this.index.repo(ws.repoId);
      const existing = ov.files.get(path);
      let current: Uint8Array | undefined;
      let currentHash: string | null;
      let baseHash: string | null;
      if (existing) {
        current = (await this.contentOf(ws, path, existing)) ?? undefined;
        currentHash = existing.hash;
        baseHash = existing.baseHash;
      } else {
        const base = await this.git.read(repo.sourcePath, ws.baseCommit, path);
        current = base?.content;
        currentHash = base?.hash ?? null;
        baseHash = base?.hash ?? null;
      }
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
        return { hash: newHash, change: (baseHash === null ? "added" : "modified") as sqlRepo.ChangeName, symbols: [] as SymbolChangeInfo[], conflicts: publicOthers(others) };
      }
      this.checkStale(ws, ov, path, existing, others);

      const diff = await diffSymbolsOrFile(path, textOf(current), content === null ? undefined : textOf(content));
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
      // A delete of a file the base does not have removes the row: there is nothing to hide.
      const dropRow = content === null && baseHash === null;
      const cumulative = [...new Set([...(existing?.symbols ?? []), ...wanted])];
      const now = this.clock.now();
      const holder = { workspaceId: ws.workspaceId, sessionId: ws.sessionId, agentId: ws.agentId, agentName: ws.agentName };
      // Three statements in the transaction (four with a claim.acquired event): the row and
      // path locks; then claims + overlay row + file event, conditional on no blocking claim; then
      // the claim.acquired event (it names the claims the statement inserted).
      const fileEvent: EventInput = {
        kind: content === null ? "file.deleted" : "file.written",
        ...this.eventBase(ws, now),
        payload: {
          case: "fileChanged",
          value: {
            path,
            change: fileChangeEnum(change),
            symbols: symbols.map((s) => ({ name: s.name, kind: s.kind, change: symbolChangeEnum(s.change) })),
            newHash: newHash ?? "",
          },
        },
      };
      let committed: { inserted: string[]; state: ChangesetStateName };
      try {
        committed = await this.registry.uow.run(async ({ trx, prepare, record }) => {
          const row = await claimsRepo.lockForWrite(trx, ws.workspaceId, [claimsRepo.claimLockKey(ws.repoId, path)]);
          const state = checkRow(ws, row);
          const { inserted, blocked } = await sqlRepo.writeWithClaims(
            trx,
            { repoId: ws.repoId, path, symbols: wanted, holder, at: new Date(now) },
            dropRow
              ? { drop: true, workspaceId: ws.workspaceId, path }
              : { workspaceId: ws.workspaceId, repoId: ws.repoId, path, content, sha256: newHash, change, baseHash, symbols: cumulative, at: new Date(now) },
            prepare(fileEvent),
          );
          if (blocked.length > 0) throw new SymbolLocked(path, blocked, wanted);
          if (inserted.length > 0) record({ kind: "claim.acquired", ...this.eventBase(ws, now), payload: { case: "claimChanged", value: { path, symbols: inserted } } });
          return { inserted, state };
        });
      } catch (err) {
        if (err instanceof SymbolLocked) throw await this.refuse(ws, err);
        throw err;
      }
      // Committed: the cache and the index follow.
      if (dropRow) ov.files.delete(path);
      else {
        ov.files.set(path, {
          hash: newHash,
          change,
          baseHash,
          symbols: cumulative,
          updatedAt: now,
          size: content?.byteLength ?? null,
          content: content === null ? null : content.byteLength <= CACHE_CONTENT_BYTES ? content : undefined,
        });
      }
      this.index.touch({
        repoId: ws.repoId,
        workspaceId: ws.workspaceId,
        meta: { sessionId: ws.sessionId, agentId: ws.agentId, agentName: ws.agentName, changesetId: ws.changeset.id, lifecycle: "active" },
        path,
        symbols: dropRow ? undefined : cumulative,
        at: now,
        changesetState: committed.state,
        changesetAt: ws.changeset.updatedAt,
      });
      return { hash: newHash, change, symbols, conflicts: publicOthers(others) };
    });
  }

  private eventBase(ws: Workspace, at: number) {
    return { repoId: ws.repoId, sessionId: ws.sessionId, workspaceId: ws.workspaceId, agentId: ws.agentId, changesetId: ws.changeset.id, occurredAt: at };
  }

  /**
   * STALE_OVERLAY: another session's change of this path went up for review (its changeset
   * entered SUBMITTED, VERIFYING or APPROVED, or it wrote the path while there) after this
   * session last saw the path. Seen: its last ReadFile of the path, its own last write of it,
   * or — never read nor written — the session's start (reads are kept in memory: after a
   * restart a session re-reads what went up for review meanwhile).
   */
  private checkStale(ws: Workspace, ov: WorkspaceOverlay, path: string, existing: CachedFile | undefined, others: readonly OtherTouch[]): void {
    if (others.length === 0) return;
    const seen = Math.max(ov.reads?.get(path) ?? 0, existing?.updatedAt ?? 0, ws.createdAt);
    for (const o of others) {
      if (o.changesetId === ws.changeset.id || !REVIEW_STATES.has(o.changesetState as ChangesetStateName)) continue;
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
  private async refuse(ws: Workspace, e: SymbolLocked): Promise<BerthError> {
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

  // ---- reads ----------------------------------------------------------------------------

  async readFile(ws: Workspace, path: string): Promise<ReadResult> {
    const ov = await this.overlay(ws);
    (ov.reads ??= new Map()).set(path, this.clock.now());
    const f = ov.files.get(path);
    if (f) {
      const content = await this.contentOf(ws, path, f);
      if (content === null || f.hash === null) throw fileNotFound(path);
      return { content, hash: f.hash, source: "overlay" };
    }
    const repo = await this.registry.repository(ws.repoId);
    const base = await this.git.read(repo.sourcePath, ws.baseCommit, path);
    if (!base) throw fileNotFound(path);
    return { content: base.content, hash: base.hash, source: "base" };
  }

  /** The merged view in path order, from after `after` (exclusive), at most `limit` entries (and whether more follow). */
  async listFiles(ws: Workspace, prefix: string, after: string, limit: number): Promise<{ files: ListedFile[]; more: boolean }> {
    const ov = await this.overlay(ws);
    const repo = await this.registry.repository(ws.repoId);
    const [tree, idx] = await Promise.all([this.git.tree(repo.sourcePath, ws.baseCommit), this.index.repo(ws.repoId)]);
    const start = after > prefix ? after : prefix;
    const inclusive = after <= prefix;
    const base = tree.paths;
    let i = lowerBound(base, start);
    if (!inclusive && i < base.length && base[i] === start) i++;
    const extra = [...ov.files.keys()].filter((p) => p.startsWith(prefix) && (inclusive ? p >= start : p > start)).sort(comparePaths);
    let j = 0;
    const files: ListedFile[] = [];
    for (;;) {
      const b = i < base.length && base[i]!.startsWith(prefix) ? base[i]! : undefined;
      const o = j < extra.length ? extra[j]! : undefined;
      if (b === undefined && o === undefined) return { files, more: false };
      let path: string;
      if (o !== undefined && (b === undefined || o <= b)) {
        path = o;
        j++;
        if (b === o) i++;
      } else {
        path = b!;
        i++;
      }
      const f = ov.files.get(path);
      if (f?.change === "deleted") continue;
      if (files.length === limit) return { files, more: true };
      files.push({
        path,
        source: f ? "overlay" : "base",
        change: f ? (f.change === "added" ? "added" : "modified") : undefined,
        modifiedByOther: this.index.touchedByOther(idx, path, ws.workspaceId),
      });
    }
  }

  // ---- claims ---------------------------------------------------------------------------

  async claim(ws: Workspace, refs: readonly { path: string; symbol: string }[]): Promise<ClaimInfo[]> {
    assertActive(ws);
    if (isTerminal(ws.changeset.state)) throw changesetTerminal(ws.changeset.id, ws.changeset.state);
    const byPath = new Map<string, string[]>();
    for (const r of refs) {
      let l = byPath.get(r.path);
      if (!l) byPath.set(r.path, (l = []));
      if (!l.includes(r.symbol)) l.push(r.symbol);
    }
    const now = this.clock.now();
    const holder = { workspaceId: ws.workspaceId, sessionId: ws.sessionId, agentId: ws.agentId, agentName: ws.agentName };
    try {
      await this.registry.uow.run(async ({ trx, record }) => {
          const row = await claimsRepo.lockForWrite(trx, ws.workspaceId, [...byPath.keys()].map((p) => claimsRepo.claimLockKey(ws.repoId, p)));
          checkRow(ws, row);
          const acquired: sqlRepo.ClaimRow[] = [];
          for (const [path, symbols] of [...byPath].sort((a, b) => comparePaths(a[0], b[0]))) {
            const { inserted, blocked } = await claimsRepo.claimOnPath(trx, ws.repoId, path, symbols, holder, new Date(now));
            if (blocked.length > 0) throw new SymbolLocked(path, blocked, symbols);
            for (const s of inserted) acquired.push({ repo_id: ws.repoId, path, symbol: s, workspace_id: ws.workspaceId, session_id: ws.sessionId, agent_id: ws.agentId, agent_name: ws.agentName, acquired_at: new Date(now) });
          }
          record(...claimEvents("claim.acquired", acquired, now, "", ws.changeset.id));
      });
    } catch (err) {
      if (err instanceof SymbolLocked) throw await this.refuse(ws, err);
      throw err;
    }
    const wanted = new Set(refs.map((r) => `${r.path}\u0000${r.symbol}`));
    return (await claimsRepo.claimsOfWorkspace(this.registry.db, ws.workspaceId)).filter((c) => wanted.has(`${c.path}\u0000${c.symbol}`)).map(claimInfo);
  }

  /** Releases some claims of the session, or all of them when `refs` is empty. */
  async release(ws: Workspace, refs: readonly { path: string; symbol: string }[]): Promise<number> {
    const now = this.clock.now();
    return this.registry.uow.run(async ({ trx, record }) => {
      const rows = refs.length === 0 ? await claimsRepo.releaseClaimsOf(trx, [ws.workspaceId]) : await claimsRepo.releaseClaims(trx, ws.workspaceId, refs);
      record(...claimEvents("claim.released", rows, now, "released", ws.changeset.id));
      return rows.length;
    });
  }

  async claimsOf(ws: Workspace): Promise<ClaimInfo[]> {
    return (await claimsRepo.claimsOfWorkspace(this.registry.db, ws.workspaceId)).map(claimInfo);
  }

  // ---- conflict awareness ---------------------------------------------------------------

  async describeOtherModifiers(repoId: string, path: string, excludeSessionId: string | undefined): Promise<{ text: string; modifiers: OtherModifierInfo[] }> {
    await this.registry.repository(repoId);
    const idx = await this.index.repo(repoId);
    const modifiers = publicOthers(this.index.others(idx, path, { sessionId: excludeSessionId }));
    return { text: describeText(modifiers), modifiers };
  }
}

type PayloadLike = { case?: string; value?: { path?: string; toState?: number } } | undefined;

function indexEventOf(kind: string, repoId: string, sessionId: string | undefined, workspaceId: string | undefined, changesetId: string | undefined, at: number, payload: PayloadLike): IndexEvent {
  const value = payload?.value;
  return {
    kind,
    repoId,
    sessionId: sessionId ?? "",
    workspaceId: workspaceId ?? "",
    changesetId: changesetId ?? "",
    at,
    ...(payload?.case === "fileChanged" && value?.path !== undefined ? { path: value.path } : {}),
    ...(payload?.case === "changesetTransitioned" && value?.toState ? { toState: changesetStateName(value.toState) ?? "draft" } : {}),
  };
}

function publicOthers(others: readonly OtherTouch[]): OtherModifierInfo[] {
  return others.map((o) => ({ sessionId: o.sessionId, agentId: o.agentId, agentName: o.agentName, symbols: o.symbols, changesetState: o.changesetState }));
}

function claimInfo(c: sqlRepo.ClaimRow): ClaimInfo {
  return { repoId: c.repo_id, path: c.path, symbol: c.symbol, sessionId: c.session_id, agentId: c.agent_id, agentName: c.agent_name, acquiredAt: c.acquired_at.getTime() };
}

/** The row a write locked must still be this session's, active, with a non-terminal changeset. */
function checkRow(ws: Workspace, row: { lifecycle: Workspace["lifecycle"]; session_id: string; state: ChangesetStateName } | undefined): ChangesetStateName {
  if (!row) throw notFound("SESSION_NOT_FOUND", `session ${ws.sessionId} has no workspace`, { session_id: ws.sessionId });
  if (row.lifecycle !== "active") assertActive({ ...ws, lifecycle: row.lifecycle, strandedAt: ws.strandedAt ?? Date.now() });
  if (row.session_id !== ws.sessionId) {
    throw failedPrecondition("SESSION_RESUMED", `session ${ws.sessionId} was resumed as ${row.session_id}`, { session_id: ws.sessionId, new_session_id: row.session_id });
  }
  if (isTerminal(row.state)) throw changesetTerminal(ws.changeset.id, row.state);
  return row.state;
}

function changesetTerminal(changesetId: string, state: ChangesetStateName): BerthError {
  return failedPrecondition("CHANGESET_TERMINAL", `changeset ${changesetId} is ${state.toUpperCase()}, a terminal state`, { changeset_id: changesetId, state: state.toUpperCase() });
}

function fileNotFound(path: string): BerthError {
  return notFound("FILE_NOT_FOUND", `${path} is neither in the overlay nor in the base`, { path });
}

function lowerBound(sorted: readonly string[], key: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
