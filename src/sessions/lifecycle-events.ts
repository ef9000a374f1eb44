/**
 * The events of a workspace row's lifecycle change, built in one place: transitions, the GC
 * and the stranded sweep all record them, and must record the same fields.
 */
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { EventInput } from "../platform/outbox.js";
import type * as repo from "./lifecycle.repository.js";

/** The EventInput of a lifecycle change of a workspace row. */
export function eventOf(row: repo.LifecycleRow, kind: string, at: number, reason: string, payload: EventInput["payload"]): EventInput {
  return {
    kind,
    repoId: row.repo_id,
    sessionId: row.session_id,
    workspaceId: row.id,
    agentId: row.agent_id,
    changesetId: row.changeset_id,
    occurredAt: at,
    reason,
    payload,
  };
}

export function strandedEvent(row: repo.LifecycleRow, at: number, reason: string): EventInput {
  return eventOf(row, "session.stranded", at, reason, { case: "sessionStranded", value: { strandedAt: timestampFromMs(at) } });
}

export function endedEvent(row: repo.LifecycleRow, kind: "session.destroyed" | "session.expired", at: number, cause: string): EventInput {
  return eventOf(row, kind, at, cause, { case: "sessionEnded", value: { cause } });
}
