/**
 * Serves the same ServiceRegistrations with @connectrpc/connect-node (Connect, gRPC-Web and
 * gRPC protocols) through the shared Pipeline; errors become ConnectErrors carrying the same
 * ErrorInfo / BadRequest details as the grpc-js bridge sends.
 */
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { fromBinary, type Message } from "@bufbuild/protobuf";
import type { ServiceRegistration } from "../api/handler.js";
import { Call, type MethodEntry, type Protocol } from "./call.js";
import type { ErrorMapper } from "./outcome.js";
import type { Pipeline } from "./pipeline.js";
import { RpcStatus } from "./status.js";
import { methodEntry } from "./grpc-bridge.js";
import { readJsonRequest } from "./json-request.js";
import { invalidArgument } from "../platform/errors.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";

/** RpcStatus → ConnectError with the status details (Connect's Code numbers equal gRPC codes). */
export const toConnectError: ErrorMapper = (status) => {
  if (!(status instanceof RpcStatus)) return new ConnectError("internal error", Code.Internal);
  const err = new ConnectError(
    status.message,
    status.code,
    undefined,
    status.details.map((d) => ({ desc: d.desc, value: d.value as never })),
  );
  // Another instance's status (a forwarded call): its details as they came, still packed.
  if (status.statusBin !== undefined) {
    err.details = fromBinary(StatusSchema, status.statusBin).details.map((any) => ({ type: any.typeUrl.slice(any.typeUrl.lastIndexOf("/") + 1), value: any.value }));
  }
  return err;
};

function readHeaders(h: Headers, name: string): string | undefined {
  return h.get(name) ?? undefined;
}

function protocolOf(ctx: HandlerContext): Protocol {
  const p = ctx.protocolName;
  return p === "grpc" || p === "grpc-web" ? p : "connect";
}

function newCall(entry: MethodEntry, ctx: HandlerContext, streaming = false): Call {
  const t = ctx.timeoutMs();
  const call = new Call(entry, protocolOf(ctx), t === undefined ? undefined : Date.now() + t, ctx.requestHeader, readHeaders, ctx.signal);
  // Streams must hear a client cancel or deadline even if the handler never reads ctx.signal.
  if (streaming) void call.signal;
  return call;
}

/**
 * Per-method JSON options: the request body is read strictly (./json-request.ts) before Connect
 * parses it, so an unknown field or enum name is refused by name instead of being dropped. The
 * refusal happens before the handler, so it is logged and counted here as a finished call.
 */
function strictJson(entry: MethodEntry, pipeline: Pipeline): { jsonOptions: object } {
  const utf8 = new TextDecoder();
  const textDecoder = {
    decode(data: Uint8Array): string {
      const text = utf8.decode(data);
      const read = readJsonRequest(entry.method.input, text);
      if (read.ok) return text;
      const call = pipeline.begin(new Call(entry, "connect", undefined, new Headers(), readHeaders, undefined));
      throw toConnectError(pipeline.fail(call, undefined, invalidArgument(read.violations)));
    },
  };
  return { jsonOptions: { textDecoder } };
}

/** Registers every method of every registration on a Connect router. */
export function addToConnectRouter(
  router: ConnectRouter,
  registrations: readonly ServiceRegistration[],
  pipeline: Pipeline,
  publicServices: ReadonlySet<string>,
): void {
  for (const reg of registrations) {
    for (const method of reg.service.methods) {
      const entry = methodEntry(reg, method, publicServices);
      const options = strictJson(entry, pipeline);
      switch (method.methodKind) {
        case "unary":
          router.rpc(method, ((req: Message, ctx: HandlerContext) =>
            pipeline.unary(pipeline.begin(newCall(entry, ctx)), req, toConnectError)) as never, options);
          break;
        case "server_streaming":
          router.rpc(method, ((req: Message, ctx: HandlerContext) =>
            pipeline.stream(pipeline.begin(newCall(entry, ctx, true)), req, toConnectError, req)) as never, options);
          break;
        case "bidi_streaming":
          router.rpc(method, ((reqs: AsyncIterable<Message>, ctx: HandlerContext) =>
            pipeline.stream(pipeline.begin(newCall(entry, ctx, true)), reqs, toConnectError)) as never, options);
          break;
        case "client_streaming":
          throw new Error(`${entry.path}: client streaming is not served`);
      }
    }
  }
}

/** The Node request handler (for http2.createServer({allowHTTP1: true}, handler)). */
export function connectHandler(
  registrations: readonly ServiceRegistration[],
  pipeline: Pipeline,
  publicServices: ReadonlySet<string>,
  /** The same cap as the gRPC port's; unbounded when absent. */
  readMaxBytes?: number,
): ReturnType<typeof connectNodeAdapter> {
  return connectNodeAdapter({
    ...(readMaxBytes !== undefined ? { readMaxBytes } : {}),
    connect: true,
    grpc: true,
    grpcWeb: true,
    routes: (router) => addToConnectRouter(router, registrations, pipeline, publicServices),
  });
}
