/**
 * Serves ServiceRegistrations on a @grpc/grpc-js Server, generically from the protobuf-es
 * descriptors: path "/<typeName>/<Method>", toBinary/fromBinary, and the shared Pipeline.
 *
 * Kept lean (the grpc path is benchmarked): per unary call one Call object; a call answered
 * synchronously (Health/Check) makes no promise and adds no listener; one answered later adds
 * one 'cancelled' listener (a shared function, no closure) and waits on the pipeline's promise.
 * A constant response (src/api/constant-message.ts) is sent as the bytes kept with it.
 */
import * as grpc from "@grpc/grpc-js";
import { fromBinary, toBinary, type DescMessage, type DescMethod, type Message } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import type { ServiceRegistration } from "../api/handler.js";
import { encodedOf } from "../api/constant-message.js";
import { Call, cancelReason, type MethodEntry } from "./call.js";
import type { Pipeline } from "./pipeline.js";
import { runPush } from "./pipeline-stream.js";
import { pushHandlerOf, type MessageSink } from "../api/push-stream.js";
import { isThenable } from "./outcome.js";
import { RpcStatus } from "./status.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";

export const STATUS_DETAILS_KEY = "grpc-status-details-bin";

const CALL = Symbol("berth.call");
type GrpcCallLike = { [CALL]?: Call; metadata: grpc.Metadata; getDeadline(): grpc.Deadline; cancelled?: boolean };

/** Shared 'cancelled' listener: `this` is the grpc-js call. */
function onCancelled(this: GrpcCallLike): void {
  const call = this[CALL];
  if (call === undefined) return;
  call.abort(cancelReason(call.deadline));
}

function readMetadata(md: grpc.Metadata, name: string): string | undefined {
  const v = md.get(name)[0];
  return v === undefined ? undefined : typeof v === "string" ? v : v.toString("utf8");
}

function deadlineOf(call: GrpcCallLike): number | undefined {
  const d = call.getDeadline();
  if (typeof d === "number") return Number.isFinite(d) ? d : undefined;
  return d.getTime();
}

function serializer(schema: DescMessage): (value: Message) => Buffer {
  return (value) => {
    const constant = encodedOf(value);
    if (constant !== undefined) return constant;
    const u8 = toBinary(schema, value);
    return Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
  };
}

/**
 * For server-streaming outputs: a message object written to many streams (one event fanned out
 * to a thousand WatchEvents subscribers) is encoded once. Unary responses are never shared, so
 * they keep the plain serializer.
 */
function sharedSerializer(schema: DescMessage): (value: Message) => Buffer {
  const encode = serializer(schema);
  const encoded = new WeakMap<Message, Buffer>();
  // The fan-out writes one message to every stream in a row: the last one needs no lookup.
  let last: Message | undefined;
  let lastBuf: Buffer | undefined;
  return (value) => {
    if (value === last) return lastBuf!;
    let buf = encoded.get(value);
    if (buf === undefined) {
      buf = encode(value);
      encoded.set(value, buf);
    }
    last = value;
    lastBuf = buf;
    return buf;
  };
}

function deserializer(schema: DescMessage): (buf: Buffer) => Message {
  return (buf) => fromBinary(schema, buf);
}

/** Request bytes of the calls whose methods keep them (ServiceRegistration.keepRequestBytes), by decoded message. */
const requestBytes = new WeakMap<Message, Uint8Array>();

function keepingDeserializer(schema: DescMessage): (buf: Buffer) => Message {
  return (buf) => {
    const m = fromBinary(schema, buf);
    requestBytes.set(m, buf);
    return m;
  };
}

/** Encodes a status as grpc-js ServiceError fields with the binary google.rpc.Status trailer. */
export function toGrpcError(status: RpcStatus): Partial<grpc.StatusObject> & { code: number; details: string } {
  const metadata = new grpc.Metadata();
  if (status.statusBin !== undefined) {
    metadata.set(STATUS_DETAILS_KEY, Buffer.from(status.statusBin.buffer, status.statusBin.byteOffset, status.statusBin.byteLength));
  } else if (status.details.length > 0) {
    const bin = toBinary(StatusSchema, {
      $typeName: "google.rpc.Status",
      code: status.code,
      message: status.message,
      details: status.details.map((d) => anyPack(d.desc, d.value)),
    });
    metadata.set(STATUS_DETAILS_KEY, Buffer.from(bin.buffer, bin.byteOffset, bin.byteLength));
  }
  return { code: status.code, details: status.message, metadata };
}

function asServiceError(err: unknown): Partial<grpc.StatusObject> & { code: number; details: string } {
  if (err instanceof RpcStatus) return toGrpcError(err);
  return { code: grpc.status.INTERNAL, details: "internal error" };
}

export function methodPath(method: DescMethod): string {
  return `/${method.parent.typeName}/${method.name}`;
}

export function methodEntry(reg: ServiceRegistration, method: DescMethod, publicServices: ReadonlySet<string>): MethodEntry {
  const handler = reg.handlers[method.localName];
  if (typeof handler !== "function") {
    throw new Error(`no handler for ${method.parent.typeName}.${method.name} (expected handlers.${method.localName})`);
  }
  return {
    method,
    path: methodPath(method),
    handler,
    output: method.output,
    public: publicServices.has(method.parent.typeName),
    keepsRequestBytes: reg.keepRequestBytes?.includes(method.localName) ?? false,
  };
}

function noop(): void {}

/** Writes a response stream with backpressure; ends with OK or the mapped error status. */
async function pump(
  gcall: grpc.ServerWritableStream<Message, Message> | grpc.ServerDuplexStream<Message, Message>,
  call: Call,
  it: AsyncIterator<Message>,
): Promise<void> {
  try {
    for (;;) {
      const r = await it.next();
      if (r.done) break;
      if (call.abortReason !== undefined) continue; // next() will throw the abort
      if (!gcall.write(r.value)) {
        let wake: () => void = noop;
        await new Promise<void>((resolve) => {
          wake = resolve;
          call.drainWaiter = resolve;
          gcall.once("drain", resolve);
        });
        call.drainWaiter = undefined;
        gcall.removeListener("drain", wake);
      }
    }
    gcall.end();
  } catch (err) {
    if (gcall.cancelled) return;
    gcall.emit("error", asServiceError(err));
  }
}

/**
 * A push handler's sink over a grpc-js stream: write() is the call's own (grpc-js frames the
 * message encoded once per event by sharedSerializer), its false return and 'drain' event the
 * backpressure; one listener per stream.
 */
function grpcSink(gcall: grpc.ServerWritableStream<Message, Message>): MessageSink<Message> {
  return { write: (m) => gcall.write(m), onDrain: (resume) => void gcall.on("drain", resume) };
}

/** Ends a pushed stream: OK, or the status (unless the client has gone). */
function endPushed(gcall: grpc.ServerWritableStream<Message, Message>, status: RpcStatus | undefined): void {
  if (status === undefined) gcall.end();
  else if (!gcall.cancelled) gcall.emit("error", toGrpcError(status));
}

/** Adds every registration to `server` through `pipeline`. */
export function addToGrpcServer(
  server: grpc.Server,
  registrations: readonly ServiceRegistration[],
  pipeline: Pipeline,
  publicServices: ReadonlySet<string>,
): void {
  for (const reg of registrations) {
    const definition: Record<string, grpc.MethodDefinition<Message, Message>> = {};
    const impl: grpc.UntypedServiceImplementation = {};
    for (const method of reg.service.methods) {
      const entry = methodEntry(reg, method, publicServices);
      definition[method.localName] = {
        path: entry.path,
        requestStream: method.methodKind === "client_streaming" || method.methodKind === "bidi_streaming",
        responseStream: method.methodKind === "server_streaming" || method.methodKind === "bidi_streaming",
        requestSerialize: serializer(method.input),
        requestDeserialize: entry.keepsRequestBytes ? keepingDeserializer(method.input) : deserializer(method.input),
        responseSerialize: method.methodKind === "unary" ? serializer(method.output) : sharedSerializer(method.output),
        responseDeserialize: deserializer(method.output),
        originalName: method.name,
      };
      switch (method.methodKind) {
        case "unary":
          impl[method.localName] = (gcall: grpc.ServerUnaryCall<Message, Message>, callback: grpc.sendUnaryData<Message>) => {
            const g = gcall as unknown as GrpcCallLike;
            const call = pipeline.begin(new Call(entry, "grpc", deadlineOf(g), gcall.metadata, readMetadata, undefined));
            if (entry.keepsRequestBytes) call.requestBytes = requestBytes.get(gcall.request);
            let out: Message | Promise<Message>;
            try {
              out = pipeline.run(call, gcall.request);
            } catch (err) {
              callback(asServiceError(err));
              return;
            }
            if (!isThenable<Message>(out)) {
              // Answered synchronously: no cancel can have come in between, nothing to listen for.
              callback(null, out);
              return;
            }
            g[CALL] = call;
            gcall.on("cancelled", onCancelled);
            (out).then(
              (msg) => callback(null, msg),
              (err: unknown) => callback(asServiceError(err)),
            );
          };
          break;
        case "server_streaming": {
          const push = pushHandlerOf(entry.handler);
          impl[method.localName] = (gcall: grpc.ServerWritableStream<Message, Message>) => {
            const g = gcall as unknown as GrpcCallLike;
            const call = pipeline.begin(new Call(entry, "grpc", deadlineOf(g), gcall.metadata, readMetadata, undefined));
            g[CALL] = call;
            gcall.on("cancelled", onCancelled);
            void call.signal; // arms the deadline timer for streams
            if (push !== undefined) void runPush(pipeline, call, gcall.request, push, grpcSink(gcall)).then((status) => endPushed(gcall, status));
            else void pump(gcall, call, pipeline.stream(call, gcall.request, undefined, gcall.request));
          };
          break;
        }
        case "bidi_streaming":
          impl[method.localName] = (gcall: grpc.ServerDuplexStream<Message, Message>) => {
            const g = gcall as unknown as GrpcCallLike;
            const call = pipeline.begin(new Call(entry, "grpc", deadlineOf(g), gcall.metadata, readMetadata, undefined));
            g[CALL] = call;
            gcall.on("cancelled", onCancelled);
            void call.signal; // arms the deadline timer for streams
            // destroyOnReturn: false — the default would destroy the duplex (and lose the
            // status) once the request side ends.
            const requests = gcall.iterator({ destroyOnReturn: false }) as AsyncIterable<Message>;
            void pump(gcall, call, pipeline.stream(call, requests));
          };
          break;
        case "client_streaming":
          throw new Error(`${entry.path}: client streaming is not supported by the bridge`);
      }
    }
    server.addService(definition, impl);
  }
}
