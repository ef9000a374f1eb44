/**
 * The shape every handler is written against, once, for both transports.
 * A handler receives the decoded request message and a CallContext and returns a message
 * init (plain object) or, for server streaming, an async iterable of them. The transports
 * (src/transport/grpc-bridge.ts, src/transport/connect-routes.ts) adapt their calls into this.
 */
import type { DescMessage, DescMethod, DescService, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import type { Principal } from "../auth/principal.js";

export interface CallContext {
  readonly method: DescMethod;
  /** Aborted when the client cancels, the deadline passes or the server shuts down. */
  readonly signal: AbortSignal;
  /** Absolute deadline in epoch ms, if the client set one. */
  readonly deadline: number | undefined;
  readonly principal: Principal;
  readonly protocol: "grpc" | "connect" | "grpc-web";
  requestHeader(name: string): string | undefined;
  /** Extra fields for this call's log line (e.g. the session id a handler resolved). */
  readonly logFields: Record<string, unknown>;
  /** The request's bytes as received, for methods registered with keepRequestBytes (gRPC only; else undefined). */
  readonly requestBytes?: Uint8Array | undefined;
}

export type UnaryHandler<I extends DescMessage, O extends DescMessage> = (
  request: MessageShape<I>,
  ctx: CallContext,
) => Promise<MessageInitShape<O>> | MessageInitShape<O>;

export type ServerStreamingHandler<I extends DescMessage, O extends DescMessage> = (
  request: MessageShape<I>,
  ctx: CallContext,
) => AsyncIterable<MessageInitShape<O>>;

/** Bidi handlers (server reflection only) get the request stream. */
export type BiDiStreamingHandler<I extends DescMessage, O extends DescMessage> = (
  requests: AsyncIterable<MessageShape<I>>,
  ctx: CallContext,
) => AsyncIterable<MessageInitShape<O>>;

type HandlerFor<M> = M extends { methodKind: "unary"; input: infer I extends DescMessage; output: infer O extends DescMessage }
  ? UnaryHandler<I, O>
  : M extends { methodKind: "server_streaming"; input: infer I extends DescMessage; output: infer O extends DescMessage }
    ? ServerStreamingHandler<I, O>
    : M extends { methodKind: "bidi_streaming"; input: infer I extends DescMessage; output: infer O extends DescMessage }
      ? BiDiStreamingHandler<I, O>
      : never;

/** Handlers for every method of a generated service descriptor, keyed by the method's localName. */
export type ServiceHandlers<S extends DescService> = {
  [K in keyof S["method"]]: HandlerFor<S["method"][K]>;
};

/** A service ready to be served: its descriptor and its handlers. */
export interface ServiceRegistration {
  readonly service: DescService;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- type-erased: one record holds handlers of every method shape and message type; the pipeline calls them with the decoded input and the Call
  readonly handlers: Record<string, (...args: any[]) => any>;
  /** Methods (local names) whose handlers get the request's bytes as received (ctx.requestBytes): they may forward the call. */
  readonly keepRequestBytes?: readonly string[];
}

export function registration<S extends DescService>(service: S, handlers: ServiceHandlers<S>, options: { keepRequestBytes?: readonly string[] } = {}): ServiceRegistration {
  return { service, handlers, ...(options.keepRequestBytes ? { keepRequestBytes: options.keepRequestBytes } : {}) };
}
