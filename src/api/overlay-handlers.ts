/**
 * WriteFile, DeleteFile, ReadFile, ListFiles, ClaimSymbols, ReleaseSymbols, DescribeOtherModifiers
 * (issue 5). The behaviour lives in src/overlay/overlay-service.ts; these validate, check the
 * caller (every session RPC goes through ownedSession) and translate.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { FileChange, FileSource, SymbolChangeKind, type SymbolChangeSchema } from "../../gen/berth/v1/types_pb.js";
import { WorkspaceService, type OtherModifierSchema } from "../../gen/berth/v1/workspace_service_pb.js";
import { BerthError, invalidArgument, type FieldViolation } from "../platform/errors.js";
import type { OverlayService } from "../overlay/overlay-service.js";
import type { OtherModifierInfo, SymbolChangeInfo } from "../overlay/overlay-port.js";
import { normalisePath } from "../overlay/paths.js";
import { changesetStateEnum } from "../platform/proto-enums.js";
import type { ChangesetStateName } from "../platform/schema.js";
import type { ServiceHandlers } from "./handler.js";
import { Check } from "./validate.js";
import { ownedSession } from "./session-access.js";
import type { WorkspaceServiceDeps } from "./workspace-deps.js";

type Methods = ServiceHandlers<typeof WorkspaceService>;
type OverlayMethods = Pick<Methods, "writeFile" | "deleteFile" | "readFile" | "listFiles" | "claimSymbols" | "releaseSymbols" | "describeOtherModifiers">;

const HASH = /^[0-9a-f]{64}$/;
const MAX_SYMBOL_CHARS = 1024;
const MAX_DECLARED = 1000;
const DEFAULT_PAGE = 1000;
const MAX_PAGE = 10_000;

/** Collects path and other violations on top of a Check, so one INVALID_ARGUMENT names them all. */
class Fields {
  readonly c = new Check();
  private readonly extra: FieldViolation[] = [];

  path(field: string, raw: string, allowEmpty = false): string | undefined {
    const r = normalisePath(field, raw, { allowEmpty });
    if (r.ok) return r.path;
    this.extra.push(r.violation);
    return undefined;
  }

  hash(field: string, value: string | undefined): string | undefined {
    if (value === undefined || value === "") return value;
    const v = value.toLowerCase();
    if (!HASH.test(v)) this.extra.push({ field, reason: "INVALID_HASH", description: "must be a sha256 in hex (64 characters) or empty" });
    return v;
  }

  symbol(field: string, value: string): string {
    if (value.length > MAX_SYMBOL_CHARS) this.extra.push({ field, reason: "TOO_LONG", description: `at most ${MAX_SYMBOL_CHARS} characters` });
    // eslint-disable-next-line no-control-regex
    else if (/[\u0000-\u001f\u007f]/.test(value)) this.extra.push({ field, reason: "CONTROL_CHARACTER", description: "must not contain control characters" });
    return value;
  }

  add(v: FieldViolation): void {
    this.extra.push(v);
  }

  done(): void {
    try {
      this.c.done();
    } catch (err) {
      if (err instanceof BerthError) throw invalidArgument([...err.violations, ...this.extra]);
      throw err;
    }
    if (this.extra.length > 0) throw invalidArgument(this.extra);
  }
}

function symbolToWire(s: SymbolChangeInfo): MessageInitShape<typeof SymbolChangeSchema> {
  return {
    name: s.name,
    kind: s.kind,
    change: s.change === "added" ? SymbolChangeKind.ADDED : s.change === "modified" ? SymbolChangeKind.MODIFIED : SymbolChangeKind.DELETED,
  };
}

function modifierToWire(m: OtherModifierInfo): MessageInitShape<typeof OtherModifierSchema> {
  return {
    sessionId: m.sessionId,
    agentId: m.agentId,
    agentName: m.agentName,
    symbols: [...m.symbols],
    changesetState: changesetStateEnum(m.changesetState as ChangesetStateName),
  };
}

function encodeToken(path: string): string {
  return Buffer.from(path, "utf8").toString("base64url");
}

export function overlayHandlers(deps: WorkspaceServiceDeps): OverlayMethods {
  const overlay = (): OverlayService => {
    if (!deps.overlay) throw new BerthError("unimplemented", "UNIMPLEMENTED", "the overlay is not configured on this server");
    return deps.overlay;
  };
  return {
    async writeFile(req, ctx) {
      const f = new Fields();
      const sessionId = f.c.uuid("session_id", req.sessionId);
      const path = f.path("path", req.path);
      const expectedHash = f.hash("expected_hash", req.expectedHash);
      if (req.declaredSymbols.length > MAX_DECLARED) f.add({ field: "declared_symbols", reason: "TOO_MANY", description: `at most ${MAX_DECLARED}` });
      req.declaredSymbols.forEach((s, i) => {
        if (s === "") f.add({ field: `declared_symbols[${i}]`, reason: "REQUIRED", description: "must not be empty" });
        else f.symbol(`declared_symbols[${i}]`, s);
      });
      f.done();
      // Size before anything else: an oversize body costs no lookup.
      overlay().checkSize(path!, req.content.byteLength);
      const ws = await ownedSession(deps.registry, ctx, sessionId!, "active");
      ctx.logFields.path = path;
      const r = await overlay().writeFile({ workspace: ws, path: path!, content: req.content, expectedHash, declaredSymbols: req.declaredSymbols });
      return {
        newHash: r.newHash,
        change: r.change === "added" ? FileChange.ADDED : FileChange.MODIFIED,
        symbols: r.symbols.map(symbolToWire),
        conflicts: r.conflicts.map(modifierToWire),
      };
    },

    async deleteFile(req, ctx) {
      const f = new Fields();
      const sessionId = f.c.uuid("session_id", req.sessionId);
      const path = f.path("path", req.path);
      const expectedHash = f.hash("expected_hash", req.expectedHash);
      if (expectedHash === "") f.add({ field: "expected_hash", reason: "INVALID_HASH", description: "a delete needs the hash of the existing file" });
      f.done();
      const ws = await ownedSession(deps.registry, ctx, sessionId!, "active");
      ctx.logFields.path = path;
      const r = await overlay().deleteFile({ workspace: ws, path: path!, expectedHash });
      return { symbols: r.symbols.map(symbolToWire), conflicts: r.conflicts.map(modifierToWire) };
    },

    async readFile(req, ctx) {
      const f = new Fields();
      const sessionId = f.c.uuid("session_id", req.sessionId);
      const path = f.path("path", req.path);
      f.done();
      const ws = await ownedSession(deps.registry, ctx, sessionId!, "active");
      const r = await overlay().readFile(ws, path!);
      return { content: r.content, hash: r.hash, source: r.source === "overlay" ? FileSource.OVERLAY : FileSource.BASE };
    },

    async listFiles(req, ctx) {
      const f = new Fields();
      const sessionId = f.c.uuid("session_id", req.sessionId);
      // A prefix is a plain string prefix of paths ("src/ma" matches "src/main.ts"); only its form is checked.
      let prefix = "";
      if (req.prefix !== "") {
        const p = normalisePath("prefix", req.prefix);
        if (!p.ok) f.add(p.violation);
        else prefix = p.path + (req.prefix.endsWith("/") ? "/" : "");
      }
      const pageSize = req.pageSize === 0 ? DEFAULT_PAGE : f.c.range("page_size", req.pageSize, 1, MAX_PAGE);
      let after = "";
      if (req.pageToken !== "") {
        after = Buffer.from(req.pageToken, "base64url").toString("utf8");
        if (after === "" || encodeToken(after) !== req.pageToken) {
          f.add({ field: "page_token", reason: "INVALID_PAGE_TOKEN", description: "not a next_page_token of ListFiles" });
        }
      }
      f.done();
      const ws = await ownedSession(deps.registry, ctx, sessionId!, "active");
      const { files, more } = await overlay().listFiles(ws, prefix, after, pageSize);
      return {
        entries: files.map((e) => ({
          path: e.path,
          source: e.source === "overlay" ? FileSource.OVERLAY : FileSource.BASE,
          change: e.change === "added" ? FileChange.ADDED : e.change === "modified" ? FileChange.MODIFIED : FileChange.UNSPECIFIED,
          modifiedByOther: e.modifiedByOther,
        })),
        nextPageToken: more && files.length > 0 ? encodeToken(files[files.length - 1]!.path) : "",
      };
    },

    async claimSymbols(req, ctx) {
      const f = new Fields();
      const sessionId = f.c.uuid("session_id", req.sessionId);
      if (req.symbols.length === 0) f.add({ field: "symbols", reason: "REQUIRED", description: "at least one symbol" });
      if (req.symbols.length > 1000) f.add({ field: "symbols", reason: "TOO_MANY", description: "at most 1000" });
      const refs = req.symbols.map((s, i) => ({ path: f.path(`symbols[${i}].path`, s.path) ?? "", symbol: f.symbol(`symbols[${i}].symbol`, s.symbol) }));
      f.done();
      const ws = await ownedSession(deps.registry, ctx, sessionId!, "active");
      const claims = await overlay().claim(ws, refs);
      return {
        claims: claims.map((c) => ({
          repoId: c.repoId,
          path: c.path,
          symbol: c.symbol,
          sessionId: c.sessionId,
          agentId: c.agentId,
          agentName: c.agentName,
          acquiredAt: timestampFromMs(c.acquiredAt),
        })),
      };
    },

    async releaseSymbols(req, ctx) {
      const f = new Fields();
      const sessionId = f.c.uuid("session_id", req.sessionId);
      if (req.symbols.length > 1000) f.add({ field: "symbols", reason: "TOO_MANY", description: "at most 1000" });
      const refs = req.symbols.map((s, i) => ({ path: f.path(`symbols[${i}].path`, s.path) ?? "", symbol: f.symbol(`symbols[${i}].symbol`, s.symbol) }));
      f.done();
      const ws = await ownedSession(deps.registry, ctx, sessionId!, "active");
      return { released: await overlay().release(ws, refs) };
    },

    async describeOtherModifiers(req, ctx) {
      const f = new Fields();
      const repoId = f.c.uuid("repo_id", req.repoId);
      const path = f.path("path", req.path);
      const exclude = f.c.uuid("exclude_session_id", req.excludeSessionId, false);
      f.done();
      if (exclude) ctx.logFields.sessionId = exclude;
      const r = await overlay().describeOtherModifiers(repoId!, path!, exclude);
      return { text: r.text, modifiers: r.modifiers.map(modifierToWire) };
    },
  };
}
