/**
 * The workspace overlay (issue 5; docs/overlay.md): each session's changes over its base commit,
 * the symbol claims its writes take, and who else touched a file.
 *
 * This module is the facade the API, the turn scheduler (through OverlayPort) and the transports
 * hold: it composes the parts and follows every instance's commits. The behaviour lives in the
 * parts: overlay-cache.ts (the per-workspace cache), file-writes.ts (the write path: size,
 * expected hash, STALE_OVERLAY, claims, SYMBOL_LOCKED), file-reads.ts (ReadFile, ListFiles),
 * claiming.ts (ClaimSymbols, ReleaseSymbols), refusals.ts (the errors they share). The parts
 * never import this module.
 */
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Logger } from "pino";
import type { Clock } from "../platform/clock.js";
import type { CommittedEvent } from "../platform/outbox.js";
import { changesetStateName } from "../platform/proto-enums.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";
import { endedLifecycle } from "../sessions/session-hooks.js";
import type { Workspace } from "../sessions/workspace.js";
import { Claiming, type ClaimInfo } from "./claiming.js";
import { FileReads, type ListedFile, type ReadResult } from "./file-reads.js";
import { FileWrites } from "./file-writes.js";
import { Diffs, type ChangesetDiff, type WorkspaceDiff } from "./diffs.js";
import { Rebases, type RebaseResult } from "./rebase.js";
import { GitBase, comparePaths } from "./git-base.js";
import { describeText, ModifiersIndex, publicOthers, type IndexEvent } from "./modifiers-index.js";
import { OverlayCache } from "./overlay-cache.js";
import type { OverlayContext, OverlayDeps, OverlaySettings } from "./overlay-context.js";
import type { DeleteInput, DeleteResult, OtherModifierInfo, OverlayEntry, OverlayPort, OverlayUse, WriteInput, WriteResult } from "./overlay-port.js";
import * as sqlRepo from "./overlay.repository.js";
import { SymbolPool } from "./symbols/pool.js";

export type { ClaimInfo } from "./claiming.js";
export type { ListedFile, ReadResult } from "./file-reads.js";
export type { ChangesetDiff, PathDiffInfo, WorkspaceDiff } from "./diffs.js";
export type { RebaseResult } from "./rebase.js";
export type { OverlayDeps, OverlaySettings } from "./overlay-context.js";

export class OverlayService implements OverlayPort {
  private readonly registry: WorkspaceRegistry;
  private readonly clock: Clock;
  private readonly logger: Logger;
  readonly settings: OverlaySettings;
  readonly git: GitBase;
  readonly index: ModifiersIndex;
  private readonly cache: OverlayCache;
  private readonly writes: FileWrites;
  private readonly reads: FileReads;
  private readonly claiming: Claiming;
  private readonly diffs: Diffs;
  private readonly rebases: Rebases;
  /** The symbol workers this service owns (none when the deps gave a differ). */
  private readonly symbolPool: SymbolPool | undefined;

  constructor(deps: OverlayDeps) {
    this.registry = deps.registry;
    this.clock = deps.clock;
    this.logger = deps.logger;
    this.settings = deps.settings;
    this.git = new GitBase(deps.settings.maxFileBytes);
    this.index = new ModifiersIndex(deps.registry.db, deps.logger);
    this.cache = new OverlayCache(deps.registry.db);
    this.symbolPool = deps.symbols
      ? undefined
      : new SymbolPool({
          onWorkerLost: (info) => deps.logger.warn(info, "symbol worker replaced; its request fell back to the whole-file unit or went to the new worker"),
          onGrammarsFailed: (languages) => deps.logger.warn({ languages }, "symbol grammars failed to load; those files are whole-file units"),
        });
    const symbols = deps.symbols ?? this.symbolPool!;
    const ctx: OverlayContext = { ...deps, git: this.git, index: this.index, cache: this.cache, symbols };
    this.writes = new FileWrites(ctx);
    this.reads = new FileReads(ctx);
    this.claiming = new Claiming(ctx, this.writes, this.reads);
    this.diffs = new Diffs(ctx);
    this.rebases = new Rebases(ctx, this.diffs);
    deps.registry.uow.addFollower("overlay", {
      apply: (e) => this.applyEvent(e),
      // Missed events: caches and the index are rebuilt from the rows on their next use.
      resync: async () => {
        this.cache.clear();
        this.index.reset();
      },
    });
    // A workspace that ends for good takes its overlay with it; a stranded one keeps it for the resume.
    deps.registry.hooks.onExit(async (change, exit) => {
      if (exit.to !== "stranded") await sqlRepo.deleteOverlaysOf(change.trx, exit.workspaceIds);
    });
  }

  /** Starts the symbol workers now, off the request path (otherwise the first write does). */
  startSymbolWorkers(): void {
    this.symbolPool?.start();
  }

  async close(): Promise<void> {
    this.git.close();
    await this.symbolPool?.close();
  }

  /**
   * A committed event of any instance: drop the caches of workspaces that left, keep the
   * modifiers index current (this instance's own file events were applied by the write itself).
   */
  private applyEvent(e: CommittedEvent): void {
    if (e.workspaceId && endedLifecycle(e.kind)) this.cache.drop(e.workspaceId);
    const at = e.occurredAt ? timestampMs(e.occurredAt) : this.clock.now();
    const local = e.workspaceId !== "" && this.registry.liveWorkspace(e.sessionId)?.workspaceId === e.workspaceId;
    this.index.apply(indexEventOf(e.kind, e.repoId, e.sessionId, e.workspaceId, e.changesetId, at, e.payload as PayloadLike), local);
    if (e.kind === "session.resumed" && local) {
      // The resumed session is usable at once: its overlay is read back from the rows now.
      const ws = this.registry.liveWorkspace(e.sessionId)!;
      void this.rehydrate(ws).catch((err: unknown) => this.logger.warn({ err, sessionId: e.sessionId }, "overlay rehydration failed; retried on first use"));
    }
  }

  // ---- the cache (overlay-cache.ts) -----------------------------------------------------

  /** Loads the overlay of a (resumed) workspace ahead of its first call. */
  rehydrate(ws: Workspace): Promise<number> {
    return this.cache.rehydrate(ws);
  }

  /** Number of workspaces whose overlay is cached (tests, metrics). */
  get cachedWorkspaces(): number {
    return this.cache.size;
  }

  // ---- OverlayPort ----------------------------------------------------------------------

  async writeFile(input: WriteInput): Promise<WriteResult> {
    const { workspace: ws, path, content } = input;
    this.checkSize(path, content.byteLength);
    const r = await this.writes.change(ws, path, content, input.expectedHash, input.declaredSymbols ?? [], { ending: input.ending === true, signal: input.signal });
    return { newHash: r.hash!, change: r.change === "added" ? "added" : "modified", symbols: r.symbols, conflicts: r.conflicts };
  }

  async deleteFile(input: DeleteInput): Promise<DeleteResult> {
    const r = await this.writes.change(input.workspace, input.path, null, input.expectedHash, [], { ending: input.ending === true, signal: input.signal });
    return { symbols: r.symbols, conflicts: r.conflicts };
  }

  async entries(ws: Workspace): Promise<readonly OverlayEntry[]> {
    const ov = await this.cache.current(ws);
    const out: OverlayEntry[] = [];
    for (const path of [...ov.files.keys()].sort(comparePaths)) {
      const v = await this.cache.view(ws, ov, path);
      if (v) out.push({ path, content: v.content, hash: v.file.hash });
    }
    return out;
  }

  /** From the cache (one pass over its rows' sizes, no content): once per capture, not per write. */
  async usage(ws: Workspace): Promise<OverlayUse> {
    const ov = await this.cache.current(ws);
    const sizes = new Map<string, number>();
    let bytes = 0;
    for (const [p, f] of ov.files) {
      sizes.set(p, f.size ?? 0);
      bytes += f.size ?? 0;
    }
    return { files: sizes.size, bytes, maxFiles: this.settings.maxOverlayFiles ?? 0, maxBytes: this.settings.maxOverlayBytes ?? 0, rowBytes: (p) => sizes.get(p) };
  }

  async readBase(ws: Workspace, path: string): Promise<Uint8Array | undefined> {
    const repo = await this.registry.repository(ws.repoId);
    return (await this.git.read(await this.registry.locations.withCommit(repo, ws.baseCommit), ws.baseCommit, path))?.content;
  }

  // ---- writes (file-writes.ts) ----------------------------------------------------------

  /** FILE_TOO_LARGE over BERTH_MAX_FILE_BYTES (WriteFile checks before anything else). */
  checkSize(path: string, size: number): void {
    this.writes.checkSize(path, size);
  }

  // ---- reads (file-reads.ts) ------------------------------------------------------------

  readFile(ws: Workspace, path: string): Promise<ReadResult> {
    return this.reads.readFile(ws, path);
  }

  /** The merged view in path order, from after `after` (exclusive), at most `limit` entries (and whether more follow). */
  listFiles(ws: Workspace, prefix: string, after: string, limit: number, includeDeleted: boolean): Promise<{ files: ListedFile[]; more: boolean }> {
    return this.reads.listFiles(ws, prefix, after, limit, includeDeleted);
  }

  // ---- diffs and rebase (diffs.ts, rebase.ts) ------------------------------------------

  diffWorkspace(ws: Workspace, binary: boolean): Promise<WorkspaceDiff> {
    return this.diffs.workspace(ws, binary);
  }

  /** `workspaces`: the changeset's sessions that hold an overlay, oldest first. */
  diffChangeset(workspaces: readonly Workspace[], binary: boolean, repoId: string): Promise<ChangesetDiff> {
    return this.diffs.changeset(workspaces, binary, repoId);
  }

  rebase(ws: Workspace, onto: string): Promise<RebaseResult> {
    return this.rebases.rebase(ws, onto);
  }

  // ---- claims (claiming.ts) -------------------------------------------------------------

  claim(ws: Workspace, refs: readonly { path: string; symbol: string }[]): Promise<ClaimInfo[]> {
    return this.claiming.claim(ws, refs);
  }

  /** Releases some claims of the session, or all of them when `refs` is empty. */
  release(ws: Workspace, refs: readonly { path: string; symbol: string }[]): Promise<number> {
    return this.claiming.release(ws, refs);
  }

  claimsOf(ws: Workspace): Promise<ClaimInfo[]> {
    return this.claiming.claimsOf(ws);
  }

  // ---- conflict awareness ---------------------------------------------------------------

  async describeOtherModifiers(repoId: string, path: string, excludeSessionId: string | undefined): Promise<{ text: string; modifiers: OtherModifierInfo[] }> {
    await this.registry.repository(repoId);
    // The path's entries checked against PostgreSQL: another instance's write is named at once.
    const idx = await this.index.refreshed(repoId, [path]);
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
