/**
 * WriteFile, DeleteFile, ReadFile, ListFiles, ClaimSymbols, ReleaseSymbols, DescribeOtherModifiers
 * (issue 5). The behaviour lives in src/overlay/overlay-service.ts; these validate, check the
 * caller (every session RPC goes through ownedSession) and translate.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { FileChange, FileSource, SymbolChangeKind, type SymbolChangeSchema } from "../../gen/berth/v1/types_pb.js";
import { type WorkspaceService, type OtherModifierSchema } from "../../gen/berth/v1/workspace_service_pb.js";
import { BerthError } from "../platform/errors.js";
import type { OverlayService } from "../overlay/overlay-service.js";
import type { OtherModifierInfo, SymbolChangeInfo } from "../overlay/overlay-port.js";
import { changesetStateEnum } from "../platform/proto-enums.js";
import type { ChangesetStateName } from "../platform/schema.js";
import type { ServiceHandlers } from "./handler.js";
import { Check } from "./validate.js";
import { nextPageToken, readPage, type PageRule } from "./pagination.js";
import { claimToWire } from "./claim-list-handler.js";
import { ownedSession } from "./session-access.js";
import { requireRepository } from "./authorize.js";
import type { WorkspaceServiceDeps } from "./workspace-deps.js";

type Methods = ServiceHandlers<typeof WorkspaceService>;
type OverlayMethods = Pick<Methods, "writeFile" | "deleteFile" | "readFile" | "listFiles" | "claimSymbols" | "releaseSymbols" | "describeOtherModifiers">;

const MAX_DECLARED = 1000;
const FILES_PAGE: PageRule = { list: "files", defaultSize: 1000, maxSize: 10_000 };

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

export function overlayHandlers(deps: WorkspaceServiceDeps): OverlayMethods {
  const overlay = (): OverlayService => {
    if (!deps.overlay) throw new BerthError("unimplemented", "UNIMPLEMENTED", "the overlay is not configured on this server");
    return deps.overlay;
  };
  return {
    async writeFile(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      const path = c.path("path", req.path);
      const expectedHash = c.hash("expected_hash", req.expectedHash);
      if (req.declaredSymbols.length > MAX_DECLARED) c.add("declared_symbols", "TOO_MANY", `at most ${MAX_DECLARED}`);
      req.declaredSymbols.forEach((s, i) => {
        if (s === "") c.add(`declared_symbols[${i}]`, "REQUIRED", "must not be empty");
        else c.symbol(`declared_symbols[${i}]`, s);
      });
      c.done();
      // Size before anything else: an oversize body costs no lookup.
      overlay().checkSize(path!, req.content.byteLength);
      const ws = await ownedSession(deps.registry, ctx, sessionId!, "active");
      ctx.logFields.path = path;
      const r = await overlay().writeFile({ workspace: ws, path: path!, content: req.content, expectedHash, declaredSymbols: req.declaredSymbols, signal: ctx.signal });
      return {
        newHash: r.newHash,
        change: r.change === "added" ? FileChange.ADDED : FileChange.MODIFIED,
        symbols: r.symbols.map(symbolToWire),
        conflicts: r.conflicts.map(modifierToWire),
      };
    },

    async deleteFile(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      const path = c.path("path", req.path);
      const expectedHash = c.hash("expected_hash", req.expectedHash);
      if (expectedHash === "") c.add("expected_hash", "INVALID_HASH", "a delete needs the hash of the existing file");
      c.done();
      const ws = await ownedSession(deps.registry, ctx, sessionId!, "active");
      ctx.logFields.path = path;
      const r = await overlay().deleteFile({ workspace: ws, path: path!, expectedHash, signal: ctx.signal });
      return { symbols: r.symbols.map(symbolToWire), conflicts: r.conflicts.map(modifierToWire) };
    },

    async readFile(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      const path = c.path("path", req.path);
      c.done();
      const ws = await ownedSession(deps.registry, ctx, sessionId!, "active");
      const r = await overlay().readFile(ws, path!);
      return { content: r.content, hash: r.hash, source: r.source === "overlay" ? FileSource.OVERLAY : FileSource.BASE };
    },

    async listFiles(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      const page = readPage(c, FILES_PAGE, req.pageSize, req.pageToken, ["string"]);
      // A prefix is a plain string prefix of paths ("src/ma" matches "src/main.ts"); only its form is checked.
      let prefix = "";
      if (req.prefix !== "") {
        const p = c.path("prefix", req.prefix);
        if (p !== undefined) prefix = p + (req.prefix.endsWith("/") ? "/" : "");
      }
      c.done();
      const ws = await ownedSession(deps.registry, ctx, sessionId!, "active");
      const { files, more } = await overlay().listFiles(ws, prefix, (page.after?.[0] as string | undefined) ?? "", page.size, req.includeDeleted);
      return {
        entries: files.map((e) => ({
          path: e.path,
          source: e.source === "overlay" ? FileSource.OVERLAY : FileSource.BASE,
          change: e.change === "added" ? FileChange.ADDED : e.change === "modified" ? FileChange.MODIFIED : e.change === "deleted" ? FileChange.DELETED : FileChange.UNSPECIFIED,
          modifiedByOther: e.modifiedByOther,
          deleted: e.change === "deleted",
        })),
        nextPageToken: more && files.length > 0 ? nextPageToken(FILES_PAGE, [files[files.length - 1]!.path]) : "",
      };
    },

    async claimSymbols(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      if (req.symbols.length === 0) c.add("symbols", "REQUIRED", "at least one symbol");
      if (req.symbols.length > 1000) c.add("symbols", "TOO_MANY", "at most 1000");
      const refs = req.symbols.map((s, i) => ({ path: c.path(`symbols[${i}].path`, s.path) ?? "", symbol: c.symbol(`symbols[${i}].symbol`, s.symbol) }));
      c.done();
      const ws = await ownedSession(deps.registry, ctx, sessionId!, "active");
      const claims = await overlay().claim(ws, refs);
      return { claims: claims.map(claimToWire) };
    },

    async releaseSymbols(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      if (req.symbols.length > 1000) c.add("symbols", "TOO_MANY", "at most 1000");
      const refs = req.symbols.map((s, i) => ({ path: c.path(`symbols[${i}].path`, s.path) ?? "", symbol: c.symbol(`symbols[${i}].symbol`, s.symbol) }));
      c.done();
      const ws = await ownedSession(deps.registry, ctx, sessionId!, "active");
      return { released: await overlay().release(ws, refs) };
    },

    async describeOtherModifiers(req, ctx) {
      const c = new Check();
      const repoId = c.uuid("repo_id", req.repoId);
      const exclude = c.uuid("exclude_session_id", req.excludeSessionId, false);
      const path = c.path("path", req.path);
      c.done();
      if (exclude) ctx.logFields.sessionId = exclude;
      await requireRepository(deps.registry, ctx.principal, repoId!);
      const r = await overlay().describeOtherModifiers(repoId!, path!, exclude);
      return { text: r.text, modifiers: r.modifiers.map(modifierToWire) };
    },
  };
}
