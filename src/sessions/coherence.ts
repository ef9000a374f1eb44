/**
 * Keeps this instance's in-memory registry true to the database. Each instance holds its own
 * sessions live in memory, but any instance may serve an RPC for any session: a StrandSession
 * or TransitionChangeset answered by instance A changes rows that instance B caches. The
 * committed events say so; the unit of work hands every instance's commits to this follower.
 * Applying an event twice changes nothing.
 */
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { CommittedEvent } from "../platform/outbox.js";
import { changesetStateName } from "../platform/proto-enums.js";
import type { CommitFollower } from "../platform/unit-of-work.js";
import type { ChangesetStateName } from "../platform/schema.js";
import { endedLifecycle, type ExitLifecycle } from "./session-hooks.js";

/** What the follower changes in the registry (an interface: the registry imports this module). */
export interface CoherentRegistry {
  noteChangesetState(changesetId: string, state: ChangesetStateName, reason: string, at: number): void;
  noteSessionEnded(sessionId: string, lifecycle: ExitLifecycle, reason: string, at: number): void;
  resync(): Promise<void>;
}

export function registryFollower(registry: CoherentRegistry): CommitFollower {
  return {
    apply(e: CommittedEvent): void {
      const at = e.occurredAt ? timestampMs(e.occurredAt) : 0;
      if (e.kind === "changeset.transitioned") {
        const state = e.payload.case === "changesetTransitioned" ? changesetStateName(e.payload.value.toState) : undefined;
        if (state) registry.noteChangesetState(e.changesetId, state, e.reason, at);
        return;
      }
      const ended = endedLifecycle(e.kind);
      if (ended) registry.noteSessionEnded(e.sessionId, ended, e.reason, at);
    },
    // Missed events: what is live here and every cached changeset are read again.
    resync: () => registry.resync(),
  };
}
