/**
 * Routing of turn RPCs to the instance that holds the session's environment (docs/turns.md,
 * "Several instances"). Who holds it is decided in src/turns/ownership.ts; how a call is sent
 * there is transport/forwarder.ts, given to the handlers as a TurnForwarder (api does not import
 * transport). Here: the decision's consequence for one call — serve it, forward it, or refuse it.
 */
import type { DescMessage, DescMethodUnary, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import { BerthError } from "../platform/errors.js";
import type { Placement } from "../turns/scheduler.js";
import type { CallContext } from "./handler.js";

/** Metadata a forwarded call carries: the id of the instance that forwarded it. A forwarded call is never forwarded again. */
export const FORWARDED_HEADER = "x-berth-forwarded";

/** The TurnService methods that may be forwarded; the gRPC bridge keeps their request bytes (CallContext.requestBytes). */
export const FORWARDED_TURN_METHODS: readonly string[] = ["beginTurn", "endTurn", "cancelTurn", "turnHeartbeat", "getWorkspaceMap"];

/** Where a call is forwarded to: an instance and its advertise address. */
export interface ForwardTarget {
  readonly instanceId: string;
  readonly address: string;
}

/**
 * Sends a call to the instance holding the session's environment: the same method and request,
 * the caller's metadata (authorization, traceparent) plus FORWARDED_HEADER, the caller's deadline
 * and cancellation. Resolves with the owner's response; rejects with the owner's status, message
 * and details unchanged (or UNAVAILABLE TURN_OWNER_UNREACHABLE when it cannot be reached).
 */
export interface TurnForwarder {
  forward<I extends DescMessage, O extends DescMessage>(method: DescMethodUnary<I, O>, target: ForwardTarget, ctx: CallContext, request: MessageShape<I>): Promise<MessageShape<O>>;
}

/** Whether this call was forwarded here by another instance. */
export function isForwarded(ctx: CallContext): boolean {
  return ctx.requestHeader(FORWARDED_HEADER) !== undefined;
}

/**
 * Serves the call here, or forwards it to the placement's instance. A forwarded call whose
 * session is held elsewhere again is refused with UNAVAILABLE TURN_OWNER_MOVED (retryable): it is
 * never forwarded twice. Without a forwarder (a single process) every call is served here.
 */
export async function serveOrForward<I extends DescMessage, O extends DescMessage>(
  forwarder: TurnForwarder | undefined,
  method: DescMethodUnary<I, O>,
  ctx: CallContext,
  request: MessageShape<I>,
  place: Placement,
  local: () => Promise<MessageInitShape<O>>,
): Promise<MessageInitShape<O>> {
  if (place.here || forwarder === undefined) return local();
  if (isForwarded(ctx)) {
    throw new BerthError("unavailable", "TURN_OWNER_MOVED", `the session's environment is now held by instance ${place.instanceId}; retry the call`, { owner_instance: place.instanceId });
  }
  if (place.address === undefined) {
    throw new BerthError("unavailable", "TURN_OWNER_UNREACHABLE", `the session's environment is held by instance ${place.instanceId}, which has no advertised address; retry later`, { owner_instance: place.instanceId });
  }
  ctx.logFields.forwardedTo = place.instanceId;
  return forwarder.forward(method, { instanceId: place.instanceId, address: place.address }, ctx, request);
}
