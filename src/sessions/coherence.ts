/**
 * Keeps this instance's in-memory registry true to the database. Each instance holds its own
 * sessions live in memory, but any instance may serve an RPC for any session: a StrandSession
 * or TransitionChangeset answered by instance A changes rows that instance B caches. The
 * committed events say so; the unit of work hands every instance's commits to this follower.
 * Applying an event twice changes nothing.
 */
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { CommittedEvent } from "../platform/outbox.js";
import type { CommitFollower } from "../platform/unit-of-work.js";
import { endedLifecycle, type ExitLifecycle } from "./session-hooks.js";

/** What the follower changes in the registry (an interface: the registry imports this module). */
export interface CoherentRegistry {
  /** Reads the changeset's row again when cached (the event's stamp, from its instance's clock, orders nothing). */
  noteTransitioned(changesetId: string): void;
  noteSessionEnded(sessionId: string, lifecycle: ExitLifecycle, reason: string, at: number): void;
  resync(): Promise<void>;
}

export function registryFollower(registry: CoherentRegistry): CommitFollower {
  return {
    apply(e: CommittedEvent): void {
      const at = e.occurredAt ? timestampMs(e.occurredAt) : 0;
      if (e.kind === "changeset.transitioned") {
        registry.noteTransitioned(e.changesetId);
        return;
      }
      const ended = endedLifecycle(e.kind);
      if (ended) registry.noteSessionEnded(e.sessionId, ended, e.reason, at);
    },
    // Missed events: what is live here and every cached changeset are read again.
    resync: () => registry.resync(),
  };
}
