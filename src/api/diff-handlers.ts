/**
 * DiffWorkspace, DiffChangeset, RebaseWorkspace (issue 15). The behaviour lives in
 * src/overlay/diffs.ts and src/overlay/rebase.ts; these validate, check the caller (a session
 * through ownedSession, a changeset as TransitionChangeset does) and translate.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { FileChange } from "../../gen/berth/v1/types_pb.js";
import type { PathDiffSchema, WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { BerthError } from "../platform/errors.js";
import { assertActive } from "../sessions/registry.js";
import type { OverlayService, PathDiffInfo } from "../overlay/overlay-service.js";
import type { ServiceHandlers } from "./handler.js";
import { actsForAnyone, requireChangesetMember, requireRepository } from "./authorize.js";
import { ownedSession } from "./session-access.js";
import { Check, LIMITS } from "./validate.js";
import { workspaceToWire } from "./wire.js";
import type { WorkspaceServiceDeps } from "./workspace-deps.js";

type Methods = ServiceHandlers<typeof WorkspaceService>;
type DiffMethods = Pick<Methods, "diffWorkspace" | "diffChangeset" | "rebaseWorkspace">;

function pathToWire(p: PathDiffInfo): MessageInitShape<typeof PathDiffSchema> {
  return {
    path: p.path,
    change: p.change === "added" ? FileChange.ADDED : p.change === "deleted" ? FileChange.DELETED : FileChange.MODIFIED,
    oldPath: p.oldPath ?? "",
    linesAdded: p.linesAdded,
    linesRemoved: p.linesRemoved,
    binary: p.binary,
    symbols: [...p.symbols],
  };
}

export function diffHandlers(deps: WorkspaceServiceDeps): DiffMethods {
  const { registry } = deps;
  const overlay = (): OverlayService => {
    if (!deps.overlay) throw new BerthError("unimplemented", "UNIMPLEMENTED", "the overlay is not configured on this server");
    return deps.overlay;
  };
  return {
    async diffWorkspace(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      c.done();
      // A stranded session's overlay is kept for its resume, and worth reviewing meanwhile.
      const ws = await ownedSession(registry, ctx, sessionId!, "any");
      if (ws.lifecycle !== "stranded") assertActive(ws);
      const d = await overlay().diffWorkspace(ws, req.binary);
      return { patch: d.patch, paths: d.paths.map(pathToWire), baseCommit: d.baseCommit };
    },

    async diffChangeset(req, ctx) {
      const c = new Check();
      const changesetId = c.uuid("changeset_id", req.changesetId);
      c.done();
      // A reviewer reads what it decides on (its grant on the repository is checked below).
      await requireChangesetMember(ctx, changesetId!, () => registry.agentsOfChangeset(changesetId!), "NOT_CHANGESET_OWNER", true);
      const repoId = await registry.repositoryOfChangeset(changesetId!);
      const workspaces = await registry.workspacesOfChangeset(changesetId!);
      if (!actsForAnyone(ctx.principal) && repoId !== undefined) await requireRepository(registry, ctx.principal, repoId);
      const d = await overlay().diffChangeset(workspaces, req.binary, repoId!);
      return {
        patch: d.patch,
        paths: d.paths.map(pathToWire),
        baseCommit: d.baseCommit,
        conflicts: d.conflicts.map((x) => ({ path: x.path, sessionIds: [...x.sessionIds], reason: x.reason })),
        sessionIds: [...d.sessionIds],
      };
    },

    async rebaseWorkspace(req, ctx) {
      const c = new Check();
      const sessionId = c.uuid("session_id", req.sessionId);
      const onto = c.text("onto", req.onto, { max: LIMITS.baseCommit, required: true, pattern: /^[A-Za-z0-9._/@^~{}-]+$/, patternDescription: "a commit id or ref" });
      c.done();
      const ws = await ownedSession(registry, ctx, sessionId!, "active");
      const r = await overlay().rebase(ws, onto!);
      return {
        workspace: workspaceToWire(r.workspace),
        oldBaseCommit: r.oldBaseCommit,
        merged: [...r.merged],
        conflicts: r.conflicts.map((x) => ({ path: x.path, kind: x.kind })),
        dropped: [...r.dropped],
      };
    },
  };
}
