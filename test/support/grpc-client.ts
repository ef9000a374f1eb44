/**
 * A @grpc/grpc-js client built generically from a protobuf-es service descriptor.
 *
 *   const c = createGrpcClient(WorkspaceService, "127.0.0.1:50051");
 *   const res = await c.getWorkspace({ sessionId }, { deadlineMs: 1000 });
 *   for await (const r of c.watchEvents({})) { ... }
 *   c.close();
 *
 * Unary methods return a promise; server-streaming methods an async iterable (breaking out of
 * the loop cancels the call); bidi methods take an iterable of requests and return an async
 * iterable of responses. Failures reject/throw a GrpcCallError with the status `code`,
 * `details` (message), trailers, and the decoded google.rpc.Status from grpc-status-details-bin.
 *
 * The address of a cluster's first instance (startBerth with BERTH_TEST_INSTANCES=2, see
 * test/support/instances.ts) means the cluster: the client holds a channel to each instance and
 * sends each call (each stream) to the next one, round robin.
 */
import * as grpc from "@grpc/grpc-js";
import {
  createRegistry,
  fromBinary,
  toBinary,
  create,
  type DescMessage,
  type DescService,
  type Message,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { StatusSchema, type Status } from "../../gen/google/rpc/status_pb.js";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  file_google_rpc_error_details,
  type BadRequest,
  type ErrorInfo,
} from "../../gen/google/rpc/error_details_pb.js";
import { clusterAt } from "./instances.js";

export interface CallOptions {
  /** Relative deadline in milliseconds. */
  readonly deadlineMs?: number;
  readonly metadata?: Record<string, string> | grpc.Metadata;
  readonly signal?: AbortSignal;
}

export interface ClientOptions {
  readonly credentials?: grpc.ChannelCredentials;
  /** Sent with every call (e.g. { authorization: "Bearer …" }). */
  readonly metadata?: Record<string, string>;
  readonly channelOptions?: grpc.ChannelOptions;
}

const detailRegistry = createRegistry(file_google_rpc_error_details);

/**
 * The responses of a streaming call: cancelled by the caller's signal or by leaving the loop
 * early; a failure is rethrown as a GrpcCallError.
 */
async function* responses(call: grpc.ClientReadableStream<Message> | grpc.ClientDuplexStream<unknown, Message>, o: CallOptions | undefined): AsyncGenerator<Message> {
  const onAbort = (): void => call.cancel();
  o?.signal?.addEventListener("abort", onAbort, { once: true });
  let finished = false;
  try {
    for await (const m of call as AsyncIterable<Message>) yield m;
    finished = true;
  } catch (err) {
    finished = true;
    throw toCallError(err);
  } finally {
    o?.signal?.removeEventListener("abort", onAbort);
    if (!finished) call.cancel();
  }
}

export class GrpcCallError extends Error {
  /** Decoded grpc-status-details-bin, when the server sent one. */
  readonly status: Status | undefined;
  /** The status details, unpacked (ErrorInfo, BadRequest, …). */
  readonly statusDetails: Message[];

  constructor(
    readonly code: grpc.status,
    readonly details: string,
    readonly metadata: grpc.Metadata,
  ) {
    super(`${grpc.status[code] ?? code}: ${details}`);
    this.name = "GrpcCallError";
    const bin = metadata.get("grpc-status-details-bin")[0];
    this.status = bin instanceof Buffer ? fromBinary(StatusSchema, bin) : undefined;
    this.statusDetails = [];
    for (const any of this.status?.details ?? []) {
      const m = anyUnpack(any, detailRegistry);
      if (m !== undefined) this.statusDetails.push(m);
    }
  }

  /** "NOT_FOUND" etc. */
  get codeName(): string {
    return grpc.status[this.code] ?? String(this.code);
  }

  get errorInfo(): ErrorInfo | undefined {
    return this.statusDetails.find((m): m is ErrorInfo => m.$typeName === ErrorInfoSchema.typeName);
  }

  get badRequest(): BadRequest | undefined {
    return this.statusDetails.find((m): m is BadRequest => m.$typeName === BadRequestSchema.typeName);
  }
}

function toCallError(err: unknown): unknown {
  const e = err as Partial<grpc.ServiceError>;
  if (e && typeof e.code === "number") return new GrpcCallError(e.code, e.details ?? "", e.metadata ?? new grpc.Metadata());
  return err;
}

type UnaryFn<M> = M extends { input: infer I extends DescMessage; output: infer O extends DescMessage }
  ? (request?: MessageInitShape<I>, options?: CallOptions) => Promise<MessageShape<O>>
  : never;
type StreamFn<M> = M extends { input: infer I extends DescMessage; output: infer O extends DescMessage }
  ? (request?: MessageInitShape<I>, options?: CallOptions) => AsyncIterable<MessageShape<O>>
  : never;
type BidiFn<M> = M extends { input: infer I extends DescMessage; output: infer O extends DescMessage }
  ? (requests: Iterable<MessageInitShape<I>> | AsyncIterable<MessageInitShape<I>>, options?: CallOptions) => AsyncIterable<MessageShape<O>>
  : never;

export type GrpcClient<S extends DescService> = {
  [K in keyof S["method"]]: S["method"][K] extends { methodKind: "unary" }
    ? UnaryFn<S["method"][K]>
    : S["method"][K] extends { methodKind: "server_streaming" }
      ? StreamFn<S["method"][K]>
      : S["method"][K] extends { methodKind: "bidi_streaming" }
        ? BidiFn<S["method"][K]>
        : never;
} & {
  /** The underlying grpc-js client (of the first instance, when the address is a cluster's). */
  readonly client: grpc.Client;
  close(): void;
};

function serialize(schema: DescMessage) {
  return (value: unknown): Buffer => {
    const u8 = toBinary(schema, create(schema, value as never));
    return Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
  };
}

function deserialize(schema: DescMessage) {
  return (buf: Buffer): Message => fromBinary(schema, buf);
}

function callMetadata(base: Record<string, string> | undefined, extra: CallOptions["metadata"]): grpc.Metadata {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(base ?? {})) md.set(k, v);
  if (extra instanceof grpc.Metadata) md.merge(extra);
  else for (const [k, v] of Object.entries(extra ?? {})) md.set(k, v);
  return md;
}

function callOptions(o: CallOptions | undefined): grpc.CallOptions {
  return o?.deadlineMs !== undefined ? { deadline: Date.now() + o.deadlineMs } : {};
}

export function createGrpcClient<S extends DescService>(service: S, address: string, opts: ClientOptions = {}): GrpcClient<S> {
  const rotation = clusterAt(address);
  const clients = (rotation?.grpcAddresses ?? [address]).map((a) => new grpc.Client(a, opts.credentials ?? grpc.credentials.createInsecure(), opts.channelOptions ?? {}));
  /** The client the next call goes through. */
  const pick = (): grpc.Client => clients[rotation ? rotation.next() : 0]!;
  const out: Record<string, unknown> = {
    client: clients[0],
    close: () => {
      for (const c of clients) c.close();
    },
  };
  for (const method of service.methods) {
    const path = `/${service.typeName}/${method.name}`;
    const ser = serialize(method.input);
    const des = deserialize(method.output);
    switch (method.methodKind) {
      case "unary":
        out[method.localName] = (request: unknown = {}, o?: CallOptions) =>
          new Promise((resolve, reject) => {
            const call = pick().makeUnaryRequest(path, ser, des, request, callMetadata(opts.metadata, o?.metadata), callOptions(o), (err, res) =>
              err ? reject(toCallError(err)) : resolve(res),
            );
            if (o?.signal) {
              if (o.signal.aborted) call.cancel();
              else o.signal.addEventListener("abort", () => call.cancel(), { once: true });
            }
          });
        break;
      case "server_streaming":
        out[method.localName] = (request: unknown = {}, o?: CallOptions) => ({
          async *[Symbol.asyncIterator]() {
            yield* responses(pick().makeServerStreamRequest(path, ser, des, request, callMetadata(opts.metadata, o?.metadata), callOptions(o)), o);
          },
        });
        break;
      case "bidi_streaming":
        out[method.localName] = (requests: Iterable<unknown> | AsyncIterable<unknown>, o?: CallOptions) => ({
          async *[Symbol.asyncIterator]() {
            const call = pick().makeBidiStreamRequest(path, ser, des, callMetadata(opts.metadata, o?.metadata), callOptions(o));
            void (async () => {
              try {
                for await (const r of requests) call.write(r);
                call.end();
              } catch {
                // A failing request source ends the call; the response side reports CANCELLED.
                call.cancel();
              }
            })();
            yield* responses(call, o);
          },
        });
        break;
      case "client_streaming":
        // No Berth service has one.
        break;
    }
  }
  return out as GrpcClient<S>;
}
