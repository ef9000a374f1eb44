/**
 * Server-streaming handlers that write their responses synchronously (WatchEvents' fan-out:
 * the hub's loop writes each event to every stream in one pass). The gRPC bridge hands such a
 * handler a sink over the grpc-js call itself; any other transport (Connect) reads the same
 * handler pulled, as an ordinary ServerStreamingHandler, through a one-item PullQueue.
 */
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { PullQueue } from "../platform/pull-queue.js";
import type { CallContext, ServerStreamingHandler } from "./handler.js";

/** Where a push handler writes its responses. */
export interface MessageSink<T> {
  /** Writes one response; false: the transport's buffer is full, write again once onDrain's callback runs. */
  write(message: T): boolean;
  /** Registers (once per stream) the callback run whenever writes may go on after write() returned false. */
  onDrain(resume: () => void): void;
}

/** Writes the stream's responses to `sink`; settles when it ends: resolves for OK, rejects with its error. */
export type PushHandler<I extends DescMessage, O extends DescMessage> = (request: MessageShape<I>, ctx: CallContext, sink: MessageSink<MessageShape<O>>) => Promise<void>;

const PUSH = Symbol("berth.push");

type Pushable<I extends DescMessage, O extends DescMessage> = ServerStreamingHandler<I, O> & { [PUSH]: PushHandler<I, O> };

/** A server-streaming handler written as a push handler: served pushed over gRPC, pulled elsewhere. */
export function pushStreaming<I extends DescMessage, O extends DescMessage>(push: PushHandler<I, O>): ServerStreamingHandler<I, O> {
  const pulled: ServerStreamingHandler<I, O> = (request, ctx) => {
    const q = new PullQueue<MessageShape<O>>();
    // The consumer leaving aborts the call (the pipeline does), which ends the handler: close is a no-op.
    const sink: MessageSink<MessageShape<O>> = { write: (m) => q.deliver(m), onDrain: (resume) => (q.source = { resume, close() {} }) };
    push(request, ctx, sink).then(
      () => q.end(),
      (err: unknown) => q.end(err),
    );
    return q;
  };
  return Object.assign(pulled, { [PUSH]: push }) satisfies Pushable<I, O>;
}

/** The push form of a registered handler, if it has one. */
export function pushHandlerOf(handler: unknown): PushHandler<DescMessage, DescMessage> | undefined {
  return (handler as Partial<Pushable<DescMessage, DescMessage>>)[PUSH];
}
