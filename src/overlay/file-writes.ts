/**
 * The write path (WriteFile, DeleteFile, and the turn scheduler's capture through the same
 * OverlayPort) carries every rule a change must pass — size, expected hash, STALE_OVERLAY, the
 * symbol claims — and the one transaction that stores it; kept apart from the reads, which need
 * none of that, and shared with claiming for the SYMBOL_LOCKED refusal.
 */
import type { Logger } from "pino";
import { isTerminal } from "../sessions/changeset-states.js";
import type { Clock } from "../platform/clock.js";
import { BerthError, failedPrecondition } from "../platform/errors.js";
import { assertActive, type Workspace } from "../sessions/workspace.js";
import { insertEvents, type EventInput } from "../platform/outbox.js";
import { fileChangeEnum, symbolChangeEnum } from "../platform/proto-enums.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";
import type { ChangesetStateName } from "../platform/schema.js";
import * as claimsRepo from "../claims/claims.repository.js";
import { sha256Hex, type GitBase } from "./git-base.js";
import { publicOthers, type ModifiersIndex, type OtherTouch } from "./modifiers-index.js";
import { CACHE_CONTENT_BYTES, type CachedFile, type OverlayCache, type WorkspaceOverlay } from "./overlay-cache.js";
import type { OverlayContext, OverlaySettings } from "./overlay-context.js";
import type { SymbolChangeInfo } from "./overlay-port.js";
import * as sqlRepo from "./overlay.repository.js";
import { changesetTerminal, checkRow, fileNotFound } from "./refusals.js";
import { diffSymbolsOrFile } from "./symbols/index.js";

/** Changeset states after which another session's change makes a blind write stale. */
const REVIEW_STATES: ReadonlySet<ChangesetStateName> = new Set(["submitted", "verifying", "approved"]);

export class SymbolLocked extends Error {
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

/**
 * Storage. Every write is one transaction: the workspace and its changeset locked FOR SHARE
 * (a strand, abandon or terminal transition waits for it, then releases what it claimed), the
 * path's claim lock, the claims (all or nothing), the overlay row and the events file.written /
 * claim.acquired. The RPC returns after the commit. A refused claim rolls all of it back and then
 * records claim.conflict in a transaction of its own.
 *
 * Whole-file unit. A file Berth cannot split into symbols (no grammar, too large, unparsable or
 * binary) is claimed as a whole: the claim's symbol is "" and it conflicts with every claim of
 * another session on that path (and any symbol claim conflicts with another's "" claim).
 */
export class FileWrites {
  private readonly registry: WorkspaceRegistry;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly settings: OverlaySettings;
  private readonly git: GitBase;
  private readonly index: ModifiersIndex;
  private readonly cache: OverlayCache;

  constructor(ctx: OverlayContext) {
    this.registry = ctx.registry;
    this.clock = ctx.clock;
    this.logger = ctx.logger;
    this.settings = ctx.settings;
    this.git = ctx.git;
    this.index = ctx.index;
    this.cache = ctx.cache;
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
  async change(ws: Workspace, path: string, content: Uint8Array | null, expectedHash: string | undefined, declared: readonly string[]) {
    assertActive(ws);
    if (isTerminal(ws.changeset.state)) throw changesetTerminal(ws.changeset.id, ws.changeset.state);
    const ov = await this.cache.overlay(ws);
    return this.cache.serialised(ov, async () => {
      const repo = await this.registry.repository(ws.repoId);
      const idx = await this.index.repo(ws.repoId);
      const existing = ov.files.get(path);
      let current: Uint8Array | undefined;
      let currentHash: string | null;
      let baseHash: string | null;
      if (existing) {
        current = (await this.cache.contentOf(ws, path, existing)) ?? undefined;
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
