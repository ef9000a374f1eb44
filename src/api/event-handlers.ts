/** WatchEvents (issue 4): replay from the outbox, then live from the event hub. */
import { create } from "@bufbuild/protobuf";
import { WatchEventsResponseSchema, type WorkspaceService, type WatchEventsResponse } from "../../gen/berth/v1/workspace_service_pb.js";
import type { Principal } from "../auth/principal.js";
import { BerthError } from "../platform/errors.js";
import type { Event } from "../delivery/event-store.js";
import { kindPatternViolations } from "../delivery/filter.js";
import type { EventSink, EventStream } from "../delivery/hub.js";
import type { ServiceHandlers } from "./handler.js";
import { pushStreaming, type MessageSink } from "./push-stream.js";
import { eventForCaller, repositoryVisibility, requireRepository, showsServerPaths } from "./authorize.js";
import { Check } from "./validate.js";
import type { WorkspaceServiceDeps } from "./workspace-deps.js";

type Methods = ServiceHandlers<typeof WorkspaceService>;

export const MAX_REPO_FILTER = 1000;

/**
 * One response message per event, shared by every subscriber it is delivered to, so that the
 * transport encodes it once (src/transport/grpc-bridge.ts) rather than once per stream. The
 * fan-out loop hands one event to every stream in a row: the last one answers without a lookup.
 */
const responses = new WeakMap<Event, WatchEventsResponse>();
let lastEvent: Event | undefined;
let lastResponse: WatchEventsResponse | undefined;
function responseFor(event: Event): WatchEventsResponse {
  if (event === lastEvent) return lastResponse!;
  let r = responses.get(event);
  if (r === undefined) {
    r = create(WatchEventsResponseSchema, { event });
    responses.set(event, r);
  }
  lastEvent = event;
  lastResponse = r;
  return r;
}

/**
 * A WatchEvents stream between the hub and the transport: the caller's read model (grants,
 * redaction) applied per event, synchronously except for the first event of a repository whose
 * grant is not known yet (the stream pauses for that lookup, keeping order).
 */
class WatchSink implements EventSink {
  stream: EventStream | undefined = undefined;
  /** The transport refused a write: the hub is paused until its drain. */
  private full = false;
  /** A grant lookup the stream waits for. */
  private lookup: Promise<void> | undefined = undefined;
  private failure: { error: unknown } | undefined = undefined;
  /** The caller has gone: a lookup that returns later writes nothing. */
  private gone = false;

  constructor(
    private readonly out: MessageSink<WatchEventsResponse>,
    private readonly principal: Principal,
    private readonly paths: boolean,
    private readonly visible: ((repoId: string) => boolean | Promise<boolean>) | undefined,
    private readonly settle: (error?: unknown) => void,
  ) {}

  deliver(event: Event): boolean {
    if (this.visible !== undefined) {
      const v = this.visible(event.repoId);
      if (v === false) return true;
      if (v !== true) {
        this.lookup = v.then(
          (ok) => {
            this.lookup = undefined;
            if (ok && !this.gone) this.write(event);
            if (!this.full) this.stream?.resume();
          },
          (err: unknown) => {
            this.lookup = undefined;
            this.failure = { error: err };
            this.stream?.close();
          },
        );
        return false;
      }
    }
    return this.write(event);
  }

  private write(event: Event): boolean {
    this.full = !this.out.write(responseFor(this.paths ? event : eventForCaller(this.principal, event)));
    return !this.full;
  }

  /** The transport drained. */
  drained(): void {
    this.full = false;
    if (this.lookup === undefined) this.stream?.resume();
  }

  end(error?: unknown): void {
    const e = error ?? this.failure?.error;
    // The caller has gone (cancelled, past its deadline, closed): nothing more is written, and its
    // call ends now, not when a pending grant lookup returns.
    this.gone = error === undefined || (error instanceof BerthError && error.kind === "cancelled");
    // Otherwise an event waiting for its grant lookup was handed over (last_seq counts it): it is written first.
    if (this.lookup !== undefined && !this.gone) void this.lookup.then(() => this.settle(e ?? this.failure?.error));
    else this.settle(e);
  }
}

export function eventHandlers(deps: WorkspaceServiceDeps): Pick<Methods, "watchEvents"> {
  return {
    watchEvents: pushStreaming<typeof WorkspaceService.method.watchEvents.input, typeof WorkspaceService.method.watchEvents.output>(async (req, ctx, out) => {
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

      ctx.logFields.afterSeq = req.afterSeq.toString();
      await new Promise<void>((resolve, reject) => {
        const sink = new WatchSink(out, p, paths, visible, (error) => (error === undefined ? resolve() : reject(error)));
        sink.stream = deps.events.push(
          { afterSeq: req.afterSeq, filter: { repoIds, kinds: req.kinds, excludeSessionId: exclude } },
          sink,
          ctx.signal,
          deps.eventSubscriberOptions ?? {},
        );
        out.onDrain(() => sink.drained());
      });
    }),
  };
}
