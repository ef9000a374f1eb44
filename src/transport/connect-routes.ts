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
      switch (method.methodKind) {
        case "unary":
          router.rpc(method, ((req: Message, ctx: HandlerContext) =>
            pipeline.unary(pipeline.begin(newCall(entry, ctx)), req, toConnectError)) as never);
          break;
        case "server_streaming":
          router.rpc(method, ((req: Message, ctx: HandlerContext) =>
            pipeline.stream(pipeline.begin(newCall(entry, ctx, true)), req, toConnectError, req)) as never);
          break;
        case "bidi_streaming":
          router.rpc(method, ((reqs: AsyncIterable<Message>, ctx: HandlerContext) =>
            pipeline.stream(pipeline.begin(newCall(entry, ctx, true)), reqs, toConnectError)) as never);
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
): ReturnType<typeof connectNodeAdapter> {
  return connectNodeAdapter({
    connect: true,
    grpc: true,
    grpcWeb: true,
    routes: (router) => addToConnectRouter(router, registrations, pipeline, publicServices),
  });
}
