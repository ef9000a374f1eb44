/**
 * The transport-agnostic call pipeline. Both transports (src/transport/grpc-bridge.ts and
 * src/transport/connect-routes.ts) create a `Call` per RPC and run it through the same
 * `Pipeline`, so authentication, error mapping, abort semantics and the per-RPC log line
 * are identical whatever the protocol.
 *
 * Hot-path notes: a `Call` allocates no AbortController, timer or closure unless the handler
 * reads `ctx.signal` (or `ctx.logFields`); abort state is a plain field set by the transport.
 */
import { create, isMessage, type DescMessage, type DescMethod, type Message } from "@bufbuild/protobuf";
import type { Logger } from "pino";
import type { BerthError } from "../platform/errors.js";
import type { CallContext, Principal } from "../api/handler.js";
import { ABORT_CANCELLED, ABORT_DEADLINE, ABORT_SHUTDOWN, GrpcCode, RpcStatus, toRpcStatus, codeName } from "./status.js";

export type Protocol = CallContext["protocol"];

export type HeaderReader = (name: string) => string | undefined;

export interface Authenticator {
  /** Reads the credentials from the request headers; throws BerthError "unauthenticated". */
  authenticate(header: HeaderReader): Promise<Principal> | Principal;
  /** When set, every call gets this principal without reading headers (BERTH_AUTH=none). */
  readonly fixedPrincipal?: Principal;
}

/** Principal of calls to auth-exempt services (health) when auth is on. */
export const UNAUTHENTICATED_PRINCIPAL: Principal = Object.freeze({
  agentId: undefined,
  roles: new Set<never>(),
  anonymous: false,
});

/** Per-method data computed once at registration. */
export interface MethodEntry {
  readonly method: DescMethod;
  /** "/berth.v1.WorkspaceService/GetWorkspace" */
  readonly path: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly handler: (...args: any[]) => any;
  readonly output: DescMessage;
  /** Exempt from authentication (grpc.health.v1.Health). */
  readonly public: boolean;
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

interface AbortObserver {
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
export class Call implements CallContext {
  principal: Principal = UNAUTHENTICATED_PRINCIPAL;
  /** Set once: why the call was aborted. */
  abortReason: BerthError | undefined = undefined;
  /** Set by a transport/stream that wants to hear about aborts (no closures). */
  observer: AbortObserver | undefined = undefined;
  /** Resolver of a transport waiting for 'drain'; woken on abort. */
  drainWaiter: (() => void) | undefined = undefined;
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

/** Maps a transport-neutral RpcStatus into what a transport throws (identity for grpc-js). */
export type ErrorMapper = (status: RpcStatus) => unknown;
const identity: ErrorMapper = (s) => s;

function isThenable<T>(v: unknown): v is PromiseLike<T> {
  return v !== null && typeof v === "object" && typeof (v as { then?: unknown }).then === "function";
}

export function toMessage(schema: DescMessage, value: unknown): Message {
  if (isMessage(value, schema)) return value;
  return create(schema, value as never);
}

/**
 * Sees every RPC of both transports once, at its completion, before its log line is written
 * (metrics, tracing). It may add fields to `line` (trace_id, span_id). Must be cheap and must
 * not throw: it runs on every call, the hot paths included.
 */
export interface RpcObserver {
  rpcEnded(call: Call, code: number, seconds: number, line: Record<string, unknown>): void;
}

export interface PipelineOptions {
  readonly authenticator: Authenticator;
  readonly logger: Logger;
  readonly observer?: RpcObserver;
}

export class Pipeline {
  readonly authenticator: Authenticator;
  readonly logger: Logger;
  readonly observer: RpcObserver | undefined;
  /** Calls in flight, for shutdown. */
  readonly inflight = new Set<Call>();
  /** True once shutdown started: new calls fail with UNAVAILABLE. */
  closing = false;
  private idleWaiters: (() => void)[] = [];

  constructor(opts: PipelineOptions) {
    this.authenticator = opts.authenticator;
    this.logger = opts.logger;
    this.observer = opts.observer;
  }

  /** Registers a new call (transports call this, then unary()/stream()). */
  begin(call: Call): Call {
    this.inflight.add(call);
    return call;
  }

  /** Authenticates synchronously when possible; returns a promise only for real auth. */
  authenticate(call: Call): void | Promise<void> {
    if (this.closing) throw ABORT_SHUTDOWN;
    if (call.entry.public) return;
    const fixed = this.authenticator.fixedPrincipal;
    if (fixed !== undefined) {
      call.principal = fixed;
      return;
    }
    const r = this.authenticator.authenticate((name) => call.requestHeader(name));
    if (isThenable<Principal>(r)) {
      return Promise.resolve(r).then((p) => {
        call.principal = p;
      });
    }
    call.principal = r;
  }

  /** Runs a unary call; resolves with the response message or rejects with mapError(status). */
  async unary(call: Call, request: unknown, mapError: ErrorMapper = identity): Promise<Message> {
    try {
      const a = this.authenticate(call);
      if (a !== undefined) await a;
      let out = call.entry.handler(request, call);
      if (isThenable(out)) out = await out;
      const aborted = call.abortReason;
      if (aborted !== undefined && aborted !== ABORT_SHUTDOWN) throw aborted;
      const msg = toMessage(call.entry.output, out);
      this.end(call, request, GrpcCode.OK, undefined);
      return msg;
    } catch (err) {
      throw mapError(this.fail(call, request, err));
    }
  }

  /**
   * Runs a server-streaming (input = request) or bidi (input = request iterable) call.
   * The returned iterator yields response messages and throws mapError(status) on failure;
   * an abort (cancel, deadline, shutdown) rejects a pending next() at once.
   */
  stream(call: Call, input: unknown, mapError: ErrorMapper = identity, request?: unknown): PipelineStream {
    return new PipelineStream(this, call, input, mapError, request);
  }

  /** Maps and logs a failure; finishes the call. */
  fail(call: Call, request: unknown, err: unknown): RpcStatus {
    const { status, internal } = toRpcStatus(err, call.syncAbort());
    this.end(call, request, status.code, internal ? err : undefined);
    return status;
  }

  /** Writes the one log line of the call and forgets it. */
  end(call: Call, request: unknown, code: number, internalError: unknown): void {
    if (!call.finish()) return;
    this.inflight.delete(call);
    const elapsedMs = performance.now() - call.start;
    const line = {
      method: call.entry.path,
      code: codeName(code),
      durationMs: Math.round(elapsedMs * 1000) / 1000,
      protocol: call.protocol,
      sessionId: call.sessionIdFor(request),
    };
    const fields = call.logFields;
    for (const k in fields) if (k !== "sessionId") (line as Record<string, unknown>)[k] = fields[k];
    this.observer?.rpcEnded(call, code, elapsedMs / 1000, line);
    if (internalError !== undefined) {
      this.logger.error({ ...line, err: internalError }, "internal error");
    } else {
      this.logger.info(line, "rpc");
    }
    if (this.inflight.size === 0 && this.idleWaiters.length > 0) {
      const ws = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of ws) w();
    }
  }

  /** Resolves true when no call is in flight, false after timeoutMs. */
  whenIdle(timeoutMs: number): Promise<boolean> {
    if (this.inflight.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), Math.max(0, timeoutMs));
      this.idleWaiters.push(() => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }

  /** Aborts every call in flight with `reason` (shutdown: UNAVAILABLE). */
  abortAll(reason: BerthError = ABORT_SHUTDOWN): void {
    for (const c of [...this.inflight]) c.abort(reason);
  }
}

/** The response iterator of a streaming call, with the pipeline's semantics. */
export class PipelineStream implements AsyncIterableIterator<Message>, AbortObserver {
  private inner: AsyncIterator<unknown> | undefined = undefined;
  private done = false;
  private pendingReject: ((e: unknown) => void) | undefined = undefined;
  private pendingStatus: RpcStatus | undefined = undefined;

  constructor(
    private readonly pipeline: Pipeline,
    private readonly call: Call,
    private readonly input: unknown,
    private readonly mapError: ErrorMapper,
    private readonly request: unknown,
  ) {
    call.observer = this;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  onCallAbort(reason: BerthError): void {
    if (this.done) return;
    const r = this.pendingReject;
    if (r !== undefined) {
      // next() is waiting on the handler: reject it now (its catch logs and closes).
      this.pendingReject = undefined;
      r(reason);
      return;
    }
    // Nobody is waiting (e.g. the transport is blocked on backpressure): close the handler
    // now; the next next() reports the abort.
    this.done = true;
    this.pendingStatus = this.pipeline.fail(this.call, this.request, reason);
    this.closeInner();
  }

  async next(): Promise<IteratorResult<Message>> {
    if (this.done) {
      const s = this.pendingStatus;
      if (s !== undefined) {
        this.pendingStatus = undefined;
        throw this.mapError(s);
      }
      return { done: true, value: undefined };
    }
    const call = this.call;
    try {
      if (this.inner === undefined) {
        const a = this.pipeline.authenticate(call);
        if (a !== undefined) await a;
        const iterable = call.entry.handler(this.input, call) as AsyncIterable<unknown>;
        this.inner = iterable[Symbol.asyncIterator]();
      }
      if (call.abortReason !== undefined) throw call.abortReason;
      const r = await this.raceAbort(this.inner.next());
      if (r.done) {
        if (call.abortReason !== undefined) throw call.abortReason;
        this.done = true;
        this.pipeline.end(call, this.request, GrpcCode.OK, undefined);
        return { done: true, value: undefined };
      }
      return { done: false, value: toMessage(call.entry.output, r.value) };
    } catch (err) {
      this.done = true;
      const status = this.pipeline.fail(call, this.request, err);
      this.closeInner();
      throw this.mapError(status);
    }
  }

  /** The consumer stopped (e.g. client cancelled): end the handler's iterator. */
  async return(): Promise<IteratorResult<Message>> {
    if (!this.done) {
      this.done = true;
      this.call.abort(ABORT_CANCELLED);
      this.pipeline.fail(this.call, this.request, ABORT_CANCELLED);
      this.closeInner();
    }
    return { done: true, value: undefined };
  }

  private raceAbort<T>(p: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pendingReject = reject;
      p.then(
        (v) => {
          this.pendingReject = undefined;
          resolve(v);
        },
        (e) => {
          this.pendingReject = undefined;
          reject(e);
        },
      );
    });
  }

  private closeInner(): void {
    const inner = this.inner;
    if (inner?.return !== undefined) {
      try {
        const r = inner.return();
        if (isThenable(r)) (r as Promise<unknown>).then(undefined, () => undefined);
      } catch {
        // the handler's iterator failed to close; nothing to report to the client
      }
    }
  }
}
