/** Domain objects → protobuf message inits. */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { Changeset, Repository, Workspace } from "../sessions/workspace.js";
import { changesetStateEnum, lifecycleEnum, modeEnum } from "../platform/proto-enums.js";
import type { ChangesetSchema, RepositorySchema, SessionInfoSchema, WorkspaceSchema } from "../../gen/berth/v1/types_pb.js";
import type { MergeOutcomeSchema } from "../../gen/berth/v1/workspace_service_pb.js";
import type { MergeOutcome } from "../overlay/landing.js";

/** `paths`: whether the caller sees server-side paths and URLs (source_path, remote_url); see api/authorize.ts showsServerPaths. */
export function repositoryToWire(r: Repository, paths: boolean): MessageInitShape<typeof RepositorySchema> {
  return {
    id: r.id,
    name: r.name,
    sourcePath: paths ? (r.sourcePath ?? "") : "",
    remoteUrl: paths ? (r.remoteUrl ?? "") : "",
    createdAt: timestampFromMs(r.createdAt),
    captureExclude: [...r.captureExclude],
    independentReview: r.independentReview,
    ...(r.check ? { check: { argv: [...r.check.argv], timeoutSeconds: r.check.timeoutSeconds } } : {}),
  };
}

export function changesetToWire(c: Changeset): MessageInitShape<typeof ChangesetSchema> {
  return {
    id: c.id,
    repoId: c.repoId,
    state: changesetStateEnum(c.state),
    reason: c.reason,
    createdAt: timestampFromMs(c.createdAt),
    updatedAt: timestampFromMs(c.updatedAt),
    commitId: c.commitId ?? "",
    ...(c.committedAt !== undefined ? { committedAt: timestampFromMs(c.committedAt) } : {}),
  };
}

export function mergeToWire(m: MergeOutcome): MessageInitShape<typeof MergeOutcomeSchema> {
  return { targetRef: m.targetRef, oldCommitId: m.oldCommit, newCommitId: m.newCommit, changesetCommitId: m.changesetCommit, fastForward: m.fastForward };
}

export function workspaceToWire(w: Workspace): MessageInitShape<typeof WorkspaceSchema> {
  return {
    workspaceId: w.workspaceId,
    sessionId: w.sessionId,
    repoId: w.repoId,
    agentId: w.agentId,
    agentName: w.agentName,
    changesetId: w.changeset.id,
    changesetState: changesetStateEnum(w.changeset.state),
    intent: w.intent,
    baseCommit: w.baseCommit,
    mode: modeEnum(w.mode),
    ...(w.expiresAt !== null ? { expiresAt: timestampFromMs(w.expiresAt) } : {}),
    createdAt: timestampFromMs(w.createdAt),
    lastActiveAt: timestampFromMs(w.lastActiveAt),
    lifecycleState: lifecycleEnum(w.lifecycle),
    ...(w.strandedAt !== null ? { strandedAt: timestampFromMs(w.strandedAt) } : {}),
    lifecycleReason: w.lifecycleReason,
    resumedFromSessionId: w.resumedFrom ?? "",
  };
}

export function sessionInfoToWire(w: Workspace): MessageInitShape<typeof SessionInfoSchema> {
  return {
    sessionId: w.sessionId,
    workspaceId: w.workspaceId,
    agentId: w.agentId,
    agentName: w.agentName,
    intent: w.intent,
    changesetId: w.changeset.id,
    changesetState: changesetStateEnum(w.changeset.state),
    mode: modeEnum(w.mode),
    createdAt: timestampFromMs(w.createdAt),
    lastActiveAt: timestampFromMs(w.lastActiveAt),
    lifecycleState: lifecycleEnum(w.lifecycle),
    ...(w.strandedAt !== null ? { strandedAt: timestampFromMs(w.strandedAt) } : {}),
    lifecycleReason: w.lifecycleReason,
    baseCommit: w.baseCommit,
  };
}
