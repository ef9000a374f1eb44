/**
 * Explicit claims (ClaimSymbols, ReleaseSymbols) are taken without a write; they share the
 * write path's locks and its SYMBOL_LOCKED refusal (file-writes.ts), which is why they live in
 * the overlay and not in claims/ (that layer may not import the overlay).
 */
import type { Clock } from "../platform/clock.js";
import { isTerminal } from "../sessions/changeset-states.js";
import { assertActive, type Workspace } from "../sessions/workspace.js";
import type { WorkspaceRegistry } from "../sessions/registry.js";
import { claimEvents } from "../claims/claim-events.js";
import * as claimsRepo from "../claims/claims.repository.js";
import { comparePaths } from "./git-base.js";
import { SymbolLocked, type FileWrites } from "./file-writes.js";
import type { OverlayContext } from "./overlay-context.js";
import type * as sqlRepo from "./overlay.repository.js";
import { changesetTerminal, checkRow } from "./refusals.js";
import type { FileReads } from "./file-reads.js";
import { extractSymbols } from "./symbols/index.js";
import { BerthError, notFound } from "../platform/errors.js";

export interface ClaimInfo {
  readonly repoId: string;
  readonly path: string;
  readonly symbol: string;
  readonly sessionId: string;
  readonly agentId: string;
  readonly agentName: string;
  readonly acquiredAt: number;
  /** A reservation: the workspace's version of the file does not define the symbol (yet). */
  readonly notYetDefined: boolean;
}

export class Claiming {
  private readonly registry: WorkspaceRegistry;
  private readonly clock: Clock;

  constructor(
    ctx: OverlayContext,
    private readonly writes: FileWrites,
    private readonly reads: FileReads,
  ) {
    this.registry = ctx.registry;
    this.clock = ctx.clock;
  }

  async claim(ws: Workspace, refs: readonly { path: string; symbol: string }[]): Promise<ClaimInfo[]> {
    assertActive(ws);
    if (isTerminal(ws.changeset.state)) throw changesetTerminal(ws.changeset.id, ws.changeset.state);
    const byPath = new Map<string, string[]>();
    for (const r of refs) {
      let l = byPath.get(r.path);
      if (!l) byPath.set(r.path, (l = []));
      if (!l.includes(r.symbol)) l.push(r.symbol);
    }
    const reserved = await this.undefinedSymbols(ws, byPath);
    const now = this.clock.now();
    const holder = { workspaceId: ws.workspaceId, sessionId: ws.sessionId, agentId: ws.agentId, agentName: ws.agentName };
    try {
      await this.registry.uow.run(async ({ trx, record }) => {
          const row = await claimsRepo.lockForWrite(trx, ws.workspaceId, [...byPath.keys()].map((p) => claimsRepo.claimLockKey(ws.repoId, p)), "claims");
          checkRow(ws, row);
          const acquired: sqlRepo.ClaimRow[] = [];
          for (const [path, symbols] of [...byPath].sort((a, b) => comparePaths(a[0], b[0]))) {
            const { inserted, blocked } = await claimsRepo.claimOnPath(trx, ws.repoId, path, symbols, holder, new Date(now), reserved.get(path));
            if (blocked.length > 0) throw new SymbolLocked(path, blocked, symbols);
            for (const s of inserted) {
              acquired.push({ repo_id: ws.repoId, path, symbol: s, workspace_id: ws.workspaceId, session_id: ws.sessionId, agent_id: ws.agentId, agent_name: ws.agentName, acquired_at: new Date(now), not_yet_defined: reserved.get(path)?.includes(s) ?? false });
            }
          }
          record(...claimEvents("claim.acquired", acquired, now, "", ws.changeset.id));
      });
    } catch (err) {
      if (err instanceof SymbolLocked) throw await this.writes.refuse(ws, err);
      throw err;
    }
    const wanted = new Set(refs.map((r) => `${r.path}\u0000${r.symbol}`));
    return (await claimsRepo.claimsOfWorkspace(this.registry.db, ws.workspaceId)).filter((c) => wanted.has(`${c.path}\u0000${c.symbol}`)).map(claimInfo);
  }

  /**
   * The named symbols each path's file does not define in the workspace's version (or the file does
   * not exist there yet): granted as reservations, marked not_yet_defined (issue 29). Agents claim
   * what they are about to add, and a typo shows in the mark instead of being refused. The whole
   * file (symbol "") is never a reservation. A file Berth cannot split into symbols (language,
   * size, binary) is still refused with SYMBOL_NOT_FOUND: no write of it would ever define the
   * symbol, so the claim should be of the file whole.
   */
  private async undefinedSymbols(ws: Workspace, byPath: ReadonlyMap<string, readonly string[]>): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>();
    for (const [path, symbols] of byPath) {
      const named = symbols.filter((s) => s !== "");
      if (named.length === 0) continue;
      const content = await this.currentContent(ws, path);
      const defs = await extractSymbols(path, content);
      if (defs === null) {
        throw notFound("SYMBOL_NOT_FOUND", `${path} has no symbols Berth can name (language, size or binary), claim it whole with symbol ""`, {
          path,
          symbols: JSON.stringify(named),
          known: "[]",
        });
      }
      const known = new Set(defs.map((d) => d.name));
      const missing = named.filter((s) => !known.has(s));
      if (missing.length > 0) out.set(path, missing);
    }
    return out;
  }

  /** The workspace's version of a file; "" when it has none (not in the base, or deleted here). */
  private async currentContent(ws: Workspace, path: string): Promise<string> {
    try {
      return Buffer.from((await this.reads.readFile(ws, path)).content).toString("utf8");
    } catch (err) {
      if (err instanceof BerthError && (err.reason === "FILE_NOT_FOUND" || err.reason === "FILE_DELETED")) return "";
      throw err;
    }
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
}

function claimInfo(c: sqlRepo.ClaimRow): ClaimInfo {
  return { repoId: c.repo_id, path: c.path, symbol: c.symbol, sessionId: c.session_id, agentId: c.agent_id, agentName: c.agent_name, acquiredAt: c.acquired_at.getTime(), notYetDefined: c.not_yet_defined };
}
