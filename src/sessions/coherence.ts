/**
 * Keeps this instance's in-memory registry true to what other instances on the same database
 * do. Each instance holds its own sessions live in memory, but any instance may serve an RPC
 * for any session: a StrandSession or TransitionChangeset answered by instance A changes rows
 * that instance B caches. The stored events say so, and every instance's hub delivers them;
 * this applies them. Applying an instance's own events again changes nothing.
 */
import type { Logger } from "pino";
import { ChangesetState } from "../../gen/berth/v1/types_pb.js";
import type { EventHub } from "../delivery/hub.js";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { changesetStateName } from "../platform/proto-enums.js";
import type { WorkspaceRegistry } from "./registry.js";
import type { LifecycleName } from "../platform/schema.js";

const ENDED: Readonly<Record<string, Exclude<LifecycleName, "active">>> = {
  "session.stranded": "stranded",
  "session.abandoned": "abandoned",
  "session.destroyed": "destroyed",
  "session.expired": "destroyed",
};

export interface Follower {
  stop(): Promise<void>;
}

export function followOtherInstances(registry: WorkspaceRegistry, hub: EventHub, logger: Logger): Follower {
  const stopping = new AbortController();
  const kinds = ["changeset.transitioned", ...Object.keys(ENDED)];
  const loop = (async () => {
    while (!stopping.signal.aborted) {
      try {
        for await (const e of hub.watch({ kinds }, stopping.signal)) {
          const at = e.occurredAt ? timestampMs(e.occurredAt) : 0;
          if (e.kind === "changeset.transitioned") {
            const to = e.payload.case === "changesetTransitioned" ? e.payload.value.toState : ChangesetState.UNSPECIFIED;
            const state = changesetStateName(to);
            if (state) registry.noteChangesetState(e.changesetId, state, e.reason, at);
          } else {
            registry.noteSessionEnded(e.sessionId, ENDED[e.kind]!, e.reason, at);
          }
        }
      } catch (err) {
        if (stopping.signal.aborted) return;
        // A subscriber that fell behind missed events: nothing cached can be trusted less than
        // the database, so the caches are re-read lazily; resubscribe and go on.
        logger.warn({ err }, "registry coherence: event stream ended; resubscribing");
        registry.forgetCachedChangesets();
      }
    }
  })();
  return {
    async stop() {
      stopping.abort();
      await loop;
    },
  };
}
