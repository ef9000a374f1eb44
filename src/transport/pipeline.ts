/**
 * The transport-agnostic call pipeline. Both transports (src/transport/grpc-bridge.ts and
 * src/transport/connect-routes.ts) create a `Call` (./call.ts) per RPC and run it through the
 * same `Pipeline`, so authentication, error mapping, abort semantics and the per-RPC log line
 * are identical whatever the protocol. Streaming calls run in ./pipeline-stream.ts.
 */
import type { Message } from "@bufbuild/protobuf";
import type { Logger } from "pino";
import { BerthError } from "../platform/errors.js";
import { FORWARDED_HEADER } from "../api/turn-routing.js";
import { AUDIT_FIELD, type AuditRecord } from "../api/authorize.js";
import type { Authenticator, Principal } from "../auth/principal.js";
import type { RpcObserver } from "../observability/rpc-observer.js";
import type { Call } from "./call.js";
import { CallLimits, type CallLimitSettings } from "./call-limits.js";
import { identity, isThenable, toMessage, type ErrorMapper } from "./outcome.js";
import { PipelineStream, type StreamHost } from "./pipeline-stream.js";
import { ABORT_SHUTDOWN, GrpcCode, NOT_READY, type RpcStatus, toRpcStatus, codeName } from "./status.js";

/** Codes that say the server (or something it depends on) failed, not the caller: logged at warn. */
const SERVER_SIDE: ReadonlySet<number> = new Set([GrpcCode.UNKNOWN, GrpcCode.DEADLINE_EXCEEDED, GrpcCode.UNAVAILABLE, GrpcCode.DATA_LOSS]);

export interface PipelineOptions {
  readonly authenticator: Authenticator;
  readonly logger: Logger;
  readonly observer?: RpcObserver;
  /** Start closed: every call but public ones fails UNAVAILABLE SERVER_STARTING until open(). */
  readonly startClosed?: boolean;
  /** Per-agent fair use (./call-limits.ts); none when absent. */
  readonly limits?: CallLimitSettings;
}

export class Pipeline implements StreamHost {
  readonly authenticator: Authenticator;
  readonly logger: Logger;
  readonly observer: RpcObserver | undefined;
  readonly limits: CallLimits;
  /** Calls in flight, for shutdown. */
  readonly inflight = new Set<Call>();
  /** True once shutdown started: new calls fail with UNAVAILABLE. */
  closing = false;
  /** False while the server starts: its ports are bound before anything changes state. */
  private ready: boolean;
  private idleWaiters: (() => void)[] = [];

  constructor(opts: PipelineOptions) {
    this.authenticator = opts.authenticator;
    this.logger = opts.logger;
    this.observer = opts.observer;
    this.limits = new CallLimits(opts.limits ?? { maxCallsPerAgent: 0, maxStreamsPerAgent: 0 });
    this.ready = !(opts.startClosed ?? false);
  }

  /** The server is ready: calls are served from now on. */
  open(): void {
    this.ready = true;
  }

  /** Registers a new call (transports call this, then unary()/stream()). */
  begin(call: Call): Call {
    this.inflight.add(call);
    return call;
  }

  /**
   * Authenticates synchronously when possible; returns a promise only for real auth. Then takes
   * the caller's fair-use slot (given back in end()), so both ports count against one limit.
   */
  authenticate(call: Call): void | Promise<void> {
    if (this.closing) throw ABORT_SHUTDOWN;
    if (call.entry.public) return;
    if (!this.ready) throw NOT_READY;
    const fixed = this.authenticator.fixedPrincipal;
    if (fixed !== undefined) {
      call.principal = fixed;
      return;
    }
    const r = this.authenticator.authenticate((name) => call.requestHeader(name));
    if (isThenable<Principal>(r)) {
      return Promise.resolve(r).then((p) => {
        call.principal = p;
        this.admit(call);
      });
    }
    call.principal = r;
    this.admit(call);
  }

  private admit(call: Call): void {
    // Aborted while authenticating (its end may already be logged): it runs no further, so it takes no slot.
    if (call.abortReason !== undefined) throw call.abortReason;
    call.slot = this.limits.acquire(call.principal, call.entry.method.methodKind === "unary" ? "call" : "stream");
  }

  /** Runs a unary call; resolves with the response message or rejects with mapError(status). */
  unary(call: Call, request: unknown, mapError: ErrorMapper = identity): Promise<Message> {
    try {
      const r = this.run(call, request, mapError);
      return isThenable<Message>(r) ? (r) : Promise.resolve(r);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Runs a unary call: the response at once when authentication and the handler answer
   * synchronously (Health/Check: no promise is made for it), else a promise of it. Fails (throws
   * or rejects) with mapError(status).
   */
  run(call: Call, request: unknown, mapError: ErrorMapper = identity): Message | Promise<Message> {
    try {
      const a = this.authenticate(call);
      if (a !== undefined) return this.settle(call, request, a.then(() => call.entry.handler(request, call)), mapError);
      const out: unknown = call.entry.handler(request, call);
      if (isThenable(out)) return this.settle(call, request, out, mapError);
      return this.complete(call, request, out);
    } catch (err) {
      throw mapError(this.fail(call, request, err));
    }
  }

  private async settle(call: Call, request: unknown, pending: PromiseLike<unknown>, mapError: ErrorMapper): Promise<Message> {
    try {
      return this.complete(call, request, await pending);
    } catch (err) {
      throw mapError(this.fail(call, request, err));
    }
  }

  /** The handler answered `out`: the response, unless the call was aborted meanwhile. */
  private complete(call: Call, request: unknown, out: unknown): Message {
    const aborted = call.abortReason;
    if (aborted !== undefined && aborted !== ABORT_SHUTDOWN) throw aborted;
    const msg = toMessage(call.entry.output, out);
    this.end(call, request, GrpcCode.OK, undefined);
    return msg;
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
    const abort = call.syncAbort();
    const { status, internal } = toRpcStatus(err, abort);
    // The reason and message make a failure's log line readable without the client's side of it.
    const cause = abort ?? (err instanceof BerthError ? err : undefined);
    if (cause !== undefined) call.logFields.reason = cause.reason;
    if (!internal) call.logFields.error = status.message;
    // What the domain kept for the server's eyes only (git's own words, a git server's answer).
    const kept = err instanceof BerthError ? (err as { cause?: unknown }).cause : undefined;
    if (!internal && kept instanceof Error) call.logFields.detail = kept.message;
    if (status.code === GrpcCode.PERMISSION_DENIED) {
      const record: AuditRecord = { event: "permission_denied", target: err instanceof BerthError ? err.metadata : {} };
      call.logFields[AUDIT_FIELD] = record;
    }
    this.end(call, request, status.code, internal ? err : undefined);
    return status;
  }

  /** Writes the one log line of the call and forgets it. */
  end(call: Call, request: unknown, code: number, internalError: unknown): void {
    // Before the once-only guard: a slot is given back whichever end() sees it.
    if (call.slot !== undefined) {
      this.limits.release(call.slot);
      call.slot = undefined;
    }
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
    let audit: AuditRecord | undefined;
    for (const k in fields) {
      if (k === AUDIT_FIELD) audit = fields[k] as AuditRecord;
      else if (k !== "sessionId") (line as Record<string, unknown>)[k] = fields[k];
    }
    this.observer?.rpcEnded(call, code, elapsedMs / 1000, line);
    if (internalError !== undefined) {
      this.logger.error({ ...line, err: internalError }, "internal error");
    } else if (SERVER_SIDE.has(code)) {
      this.logger.warn(line, "rpc failed on the server's side");
    } else {
      this.logger.info(line, "rpc");
    }
    if (audit !== undefined) this.audit(call, line, code, audit);
    if (this.inflight.size === 0 && this.idleWaiters.length > 0) {
      const ws = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of ws) w();
    }
  }

  /**
   * The audit line of a call: every PERMISSION_DENIED and every admin action on what belongs to
   * another principal, with who called and what was targeted (docs/security.md, "Audit").
   */
  private audit(call: Call, line: { method: string; protocol: string; sessionId: unknown }, code: number, record: AuditRecord): void {
    const p = call.principal;
    this.logger.warn(
      {
        audit: record.event,
        method: line.method,
        code: codeName(code),
        protocol: line.protocol,
        principal: { agentId: p.agentId ?? null, roles: [...p.roles], anonymous: p.anonymous },
        target: { ...(typeof line.sessionId === "string" ? { session_id: line.sessionId } : {}), ...record.target },
        ...(call.requestHeader(FORWARDED_HEADER) !== undefined ? { forwardedBy: call.requestHeader(FORWARDED_HEADER) } : {}),
      },
      "audit",
    );
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
