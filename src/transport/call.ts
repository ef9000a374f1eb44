/**
 * One RPC in flight, as both transports create it and as handlers see it (CallContext).
 * Kept apart from the pipeline that runs it so that the transports, the stream runner and the
 * observers can depend on the call without depending on each other.
 *
 * Hot-path notes: a `Call` allocates no AbortController, timer or closure unless the handler
 * reads `ctx.signal` (or `ctx.logFields`); abort state is a plain field set by the transport.
 */
import type { DescMessage, DescMethod } from "@bufbuild/protobuf";
import type { BerthError } from "../platform/errors.js";
import { UNAUTHENTICATED_PRINCIPAL, type Principal } from "../auth/principal.js";
import type { ObservedCall } from "../observability/rpc-observer.js";
import type { CallContext } from "../api/handler.js";
import type { Slot } from "./call-limits.js";
import { ABORT_CANCELLED, ABORT_DEADLINE, GrpcCode } from "./status.js";

export type Protocol = CallContext["protocol"];

/** Per-method data computed once at registration. */
export interface MethodEntry {
  readonly method: DescMethod;
  /** "/berth.v1.WorkspaceService/GetWorkspace" */
  readonly path: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- type-erased: the registered handler of any method shape and message type (ServiceHandlers in api/handler.ts keeps the typed view)
  readonly handler: (...args: any[]) => any;
  readonly output: DescMessage;
  /** Exempt from authentication (grpc.health.v1.Health). */
  readonly public: boolean;
  /** The gRPC bridge keeps the request's bytes (CallContext.requestBytes): the call may be forwarded. */
  readonly keepsRequestBytes?: boolean;
}

/** Reads header `name` from a transport's header object (grpc-js Metadata, fetch Headers). */
export type HeaderSourceReader<H> = (source: H, name: string) => string | undefined;

/**
 * A client whose own deadline expires cancels the stream; that cancel reaches the server a
 * little before the server's copy of the deadline (which starts when the request arrives). A
 * cancel this close to the deadline is reported as DEADLINE_EXCEEDED.
 */
export const DEADLINE_SLACK_MS = 250;

/** The abort reason for a transport-level cancel of a call with this deadline. */
export function cancelReason(deadline: number | undefined): BerthError {
  return deadline !== undefined && Date.now() >= deadline - DEADLINE_SLACK_MS ? ABORT_DEADLINE : ABORT_CANCELLED;
}

/** Told when its call is aborted (the streaming runner). */
export interface AbortObserver {
  onCallAbort(reason: BerthError): void;
}

function timerAbort(call: Call): void {
  call.abort(ABORT_DEADLINE);
}

function upstreamAbort(this: AbortSignal & { __berthCall?: Call }): void {
  const call = this.__berthCall;
  if (call) call.abortFromUpstream();
}

/** One RPC in flight; it is the handler's CallContext. */
export class Call implements CallContext, ObservedCall {
  principal: Principal = UNAUTHENTICATED_PRINCIPAL;
  /** Set once: why the call was aborted. */
  abortReason: BerthError | undefined = undefined;
  /** Set by a transport/stream that wants to hear about aborts (no closures). */
  observer: AbortObserver | undefined = undefined;
  /** Resolver of a transport waiting for 'drain'; woken on abort. */
  drainWaiter: (() => void) | undefined = undefined;
  /** The caller's fair-use slot (./call-limits.ts), given back when the call ends. */
  slot: Slot | undefined = undefined;
  /** The request as received (gRPC, methods that keep it): a forwarded call sends these bytes on. */
  requestBytes: Uint8Array | undefined = undefined;
  /** performance.now() at start. */
  readonly start: number;
  private controller: AbortController | undefined = undefined;
  private timer: NodeJS.Timeout | undefined = undefined;
  private fields: Record<string, unknown> | undefined = undefined;
  private finished = false;

  constructor(
    readonly entry: MethodEntry,
    readonly protocol: Protocol,
    readonly deadline: number | undefined,
    private readonly headerSource: unknown,
    private readonly headerReader: HeaderSourceReader<never>,
    /** The transport's own signal (Connect), folded into ours lazily. */
    private readonly upstream: AbortSignal | undefined,
  ) {
    this.start = performance.now();
  }

  get method(): DescMethod {
    return this.entry.method;
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      const controller = (this.controller = new AbortController());
      if (this.abortReason !== undefined) {
        controller.abort(this.abortReason);
      } else if (!this.finished) {
        if (this.upstream !== undefined) {
          if (this.upstream.aborted) this.abortFromUpstream();
          else {
            (this.upstream as AbortSignal & { __berthCall?: Call }).__berthCall = this;
            this.upstream.addEventListener("abort", upstreamAbort, { once: true });
          }
        }
        if (this.deadline !== undefined && this.abortReason === undefined) {
          const ms = this.deadline - Date.now();
          if (ms <= 0) this.abort(ABORT_DEADLINE);
          else this.timer = setTimeout(timerAbort, ms, this);
        }
      }
    }
    return this.controller.signal;
  }

  get logFields(): Record<string, unknown> {
    return (this.fields ??= {});
  }

  requestHeader(name: string): string | undefined {
    return (this.headerReader as HeaderSourceReader<unknown>)(this.headerSource, name);
  }

  /** Aborts the call (idempotent): the signal fires, a pending stream read rejects. */
  abort(reason: BerthError): void {
    if (this.abortReason !== undefined || this.finished) return;
    this.abortReason = reason;
    this.controller?.abort(reason);
    const w = this.drainWaiter;
    if (w !== undefined) {
      this.drainWaiter = undefined;
      w();
    }
    this.observer?.onCallAbort(reason);
  }

  /** The transport's signal fired: deadline if it has passed, else a client cancel. */
  abortFromUpstream(): void {
    const reason = this.upstream?.reason as { code?: unknown } | undefined;
    const deadlineHit = reason !== undefined && reason !== null && reason.code === GrpcCode.DEADLINE_EXCEEDED;
    this.abort(deadlineHit ? ABORT_DEADLINE : cancelReason(this.deadline));
  }

  /** Brings abort state up to date before an outcome is decided (no signal was ever read). */
  syncAbort(): BerthError | undefined {
    if (this.abortReason === undefined) {
      if (this.upstream?.aborted) this.abortFromUpstream();
      else if (this.deadline !== undefined && Date.now() >= this.deadline) this.abort(ABORT_DEADLINE);
    }
    return this.abortReason;
  }

  /** Releases timers/listeners. Called once by the pipeline. */
  finish(): boolean {
    if (this.finished) return false;
    this.finished = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.controller !== undefined && this.upstream !== undefined) {
      this.upstream.removeEventListener("abort", upstreamAbort);
    }
    this.observer = undefined;
    this.drainWaiter = undefined;
    return true;
  }

  get isFinished(): boolean {
    return this.finished;
  }

  /** sessionId for the log line: logFields.sessionId, else the request's session_id. */
  sessionIdFor(request: unknown): unknown {
    const f = this.fields?.["sessionId"];
    if (f !== undefined) return f;
    if (request !== null && typeof request === "object") {
      const s = (request as { sessionId?: unknown }).sessionId;
      if (typeof s === "string" && s !== "") return s;
    }
    return undefined;
  }
}
