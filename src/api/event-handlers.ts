/** WatchEvents (issue 4): replay from the outbox, then live from the event hub. */
import { create } from "@bufbuild/protobuf";
import { WatchEventsResponseSchema, type WorkspaceService, type WatchEventsResponse } from "../../gen/berth/v1/workspace_service_pb.js";
import type { Event } from "../delivery/event-store.js";
import { kindPatternViolations } from "../delivery/filter.js";
import type { ServiceHandlers } from "./handler.js";
import { eventForCaller, repositoryVisibility, requireRepository, showsServerPaths } from "./authorize.js";
import { Check } from "./validate.js";
import type { WorkspaceServiceDeps } from "./workspace-deps.js";

type Methods = ServiceHandlers<typeof WorkspaceService>;

export const MAX_REPO_FILTER = 1000;

/**
 * One response message per event, shared by every subscriber it is delivered to, so that the
 * transport encodes it once (src/transport/grpc-bridge.ts) rather than once per stream.
 */
const responses = new WeakMap<Event, WatchEventsResponse>();
function responseFor(event: Event): WatchEventsResponse {
  let r = responses.get(event);
  if (r === undefined) {
    r = create(WatchEventsResponseSchema, { event });
    responses.set(event, r);
  }
  return r;
}

export function eventHandlers(deps: WorkspaceServiceDeps): Pick<Methods, "watchEvents"> {
  return {
    async *watchEvents(req, ctx) {
      const c = new Check();
      const repoIds: string[] = [];
      req.repoIds.forEach((id, i) => {
        const v = c.uuid(`repo_ids[${i}]`, id);
        if (v) repoIds.push(v);
      });
      const exclude = c.uuid("exclude_session_id", req.excludeSessionId, false);
      c.done();
      // The filter's size and kind patterns: a second check, once the ids are valid (as before).
      const k = new Check();
      if (req.repoIds.length > MAX_REPO_FILTER) k.add("repo_ids", "TOO_MANY", `at most ${MAX_REPO_FILTER} repositories, got ${req.repoIds.length}`);
      for (const v of kindPatternViolations(req.kinds)) k.add(v.field, v.reason, v.description);
      k.done();

      // The read model: a repository asked for by name must be granted; without one, the
      // stream holds the events of the granted repositories only.
      const p = ctx.principal;
      for (const id of repoIds) await requireRepository(deps.registry, p, id);
      const visible = repoIds.length > 0 ? undefined : repositoryVisibility(deps.registry, p);
      const paths = showsServerPaths(p);

      const hub = deps.events;
      ctx.logFields.afterSeq = req.afterSeq.toString();
      const stream = hub.stream(
        { afterSeq: req.afterSeq, filter: { repoIds, kinds: req.kinds, excludeSessionId: exclude } },
        ctx.signal,
        deps.eventSubscriberOptions ?? {},
      );
      for await (const event of stream) {
        if (visible !== undefined) {
          const v = visible(event.repoId);
          if (!(v === true || (v !== false && (await v)))) continue;
        }
        yield responseFor(paths ? event : eventForCaller(p, event));
      }
    },
  };
}
