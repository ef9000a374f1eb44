/**
 * Writes, reads and claims refuse a workspace in the same words (CHANGESET_TERMINAL,
 * FILE_NOT_FOUND, the state of the row a write locked); one definition keeps their codes and
 * metadata from drifting apart.
 */
import { BerthError, failedPrecondition, notFound } from "../platform/errors.js";
import type { ChangesetStateName } from "../platform/schema.js";
import { isTerminal } from "../sessions/changeset-states.js";
import { assertActive, type Workspace } from "../sessions/workspace.js";

/**
 * The row a write locked must still be this session's, active, with a non-terminal changeset.
 * `ending`: a turn's capture as the session is stranded, which may also write while it is stranded.
 */
export function checkRow(ws: Workspace, row: { lifecycle: Workspace["lifecycle"]; session_id: string; state: ChangesetStateName } | undefined, ending = false): ChangesetStateName {
  if (!row) throw notFound("SESSION_NOT_FOUND", `session ${ws.sessionId} has no workspace`, { session_id: ws.sessionId });
  if (row.lifecycle !== "active" && !(ending && row.lifecycle === "stranded")) assertActive({ ...ws, lifecycle: row.lifecycle, strandedAt: ws.strandedAt ?? Date.now() });
  if (row.session_id !== ws.sessionId) {
    throw failedPrecondition("SESSION_RESUMED", `session ${ws.sessionId} was resumed as ${row.session_id}`, { session_id: ws.sessionId, new_session_id: row.session_id });
  }
  if (isTerminal(row.state)) throw changesetTerminal(ws.changeset.id, row.state);
  return row.state;
}

export function changesetTerminal(changesetId: string, state: ChangesetStateName): BerthError {
  return failedPrecondition("CHANGESET_TERMINAL", `changeset ${changesetId} is ${state.toUpperCase()}, a terminal state`, { changeset_id: changesetId, state: state.toUpperCase() });
}

export function fileNotFound(path: string): BerthError {
  return notFound("FILE_NOT_FOUND", `${path} is neither in the overlay nor in the base`, { path });
}

/**
 * A path this workspace deleted: NOT_FOUND like any missing file (it is not in the workspace's
 * view, and retrying changes nothing), with its own reason so that the agent is told why.
 */
export function fileDeleted(path: string): BerthError {
  return notFound("FILE_DELETED", `${path} was deleted in this workspace`, { path });
}

/** A write or delete whose path goes through a symbolic link of the base commit (one the workspace has not deleted). */
export function traversesSymlink(path: string, symlink: string): BerthError {
  return failedPrecondition(
    "PATH_TRAVERSES_SYMLINK",
    `${path} goes through ${symlink}, a symbolic link in the base commit: a change there would land where the link points; delete ${symlink} first to make it a directory of this workspace`,
    { field: "path", path, symlink },
  );
}

export type ShapeReason = "PATH_IS_DIRECTORY" | "PATH_UNDER_FILE";

export interface ShapeConflict {
  readonly reason: ShapeReason;
  /** A file below the path (PATH_IS_DIRECTORY) or the file above it (PATH_UNDER_FILE). */
  readonly conflicting: string;
}

/** A write that would make a path of the view both a file and a directory (path-shape.ts). */
export function pathShape(path: string, c: ShapeConflict): BerthError {
  const details = { field: "path", path, conflicting_path: c.conflicting };
  return c.reason === "PATH_IS_DIRECTORY"
    ? failedPrecondition(
        "PATH_IS_DIRECTORY",
        `${path} is a directory in this workspace (it holds ${c.conflicting}): a path is a file or a directory, never both; delete the files below ${path} first to replace the directory by a file`,
        details,
      )
    : failedPrecondition(
        "PATH_UNDER_FILE",
        `${path} is below ${c.conflicting}, a file in this workspace: a path is a file or a directory, never both; delete ${c.conflicting} first to make it a directory`,
        details,
      );
}

/** A file over BERTH_MAX_FILE_BYTES, written or read (a base file is refused before any of it is read). */
export function fileTooLarge(path: string, size: number, limit: number): BerthError {
  return new BerthError("resource_exhausted", "FILE_TOO_LARGE", `${path}: ${size} bytes is over the limit of ${limit}`, {
    path,
    size_bytes: String(size),
    limit_bytes: String(limit),
  });
}
