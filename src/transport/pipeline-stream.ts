/**
 * The response iterator of a server-streaming or bidi call. Apart from the unary pipeline
 * because its abort handling (a pending next() rejected at once, the handler's iterator closed)
 * is a state machine of its own; it reaches the pipeline only through StreamHost, so that the
 * pipeline, which creates streams, is the one that imports.
 *
 * runPush() is the other way to run a server stream: a push handler (src/api/push-stream.ts)
 * writing to the transport's sink itself, with no iterator between them.
 */
import type { Message } from "@bufbuild/protobuf";
import type { MessageSink, PushHandler } from "../api/push-stream.js";
import type { BerthError } from "../platform/errors.js";
import type { AbortObserver, Call } from "./call.js";
import { isThenable, toMessage, type ErrorMapper } from "./outcome.js";
import { ABORT_CANCELLED, GrpcCode, type RpcStatus } from "./status.js";

/** What a stream needs of the pipeline that runs it (src/transport/pipeline.ts implements it). */
export interface StreamHost {
  /** Authenticates synchronously when possible; returns a promise only for real auth. */
  authenticate(call: Call): void | Promise<void>;
  /** Maps and logs a failure; finishes the call. */
  fail(call: Call, request: unknown, err: unknown): RpcStatus;
  /** Writes the one log line of the call and forgets it. */
  end(call: Call, request: unknown, code: number, internalError: unknown): void;
}

/** The response iterator of a streaming call, with the pipeline's semantics. */
export class PipelineStream implements AsyncIterableIterator<Message>, AbortObserver {
  private inner: AsyncIterator<unknown> | undefined = undefined;
  private done = false;
  private pendingReject: ((e: unknown) => void) | undefined = undefined;
  private pendingStatus: RpcStatus | undefined = undefined;

  constructor(
    private readonly pipeline: StreamHost,
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
        if (isThenable(r)) (r as Promise<unknown>).then(undefined, () => undefined); // as below, when the close fails later
      } catch {
        // the handler's iterator failed to close; nothing to report to the client
      }
    }
  }
}

/**
 * Runs a push handler with the pipeline's semantics (authentication, the fair-use slot, error
 * mapping, one log line). Resolves with undefined when the stream ended OK, else with the
 * status to end it with. An abort (cancel, deadline, shutdown) reaches the handler through
 * ctx.signal, once per stream; its status is the abort's.
 */
export async function runPush(host: StreamHost, call: Call, request: unknown, push: PushHandler<never, never>, sink: MessageSink<Message>): Promise<RpcStatus | undefined> {
  try {
    const a = host.authenticate(call);
    if (a !== undefined) await a;
    if (call.abortReason !== undefined) throw call.abortReason;
    await push(request as never, call, sink);
    if (call.abortReason !== undefined) throw call.abortReason;
    host.end(call, request, GrpcCode.OK, undefined);
    return undefined;
  } catch (err) {
    return host.fail(call, request, err);
  }
}
