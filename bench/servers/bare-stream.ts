/**
 * The fan-out limit of the stack: a bare @grpc/grpc-js server (same options as Berth's) with a
 * server-streaming method that writes one pre-encoded message to every open stream.
 *
 * - `/bench.BareStream/Watch` (server streaming): the request is ignored; the stream stays open
 *   and receives every published message.
 * - `/bench.BareStream/Publish` (unary): the request's bytes are the message to fan out (the
 *   watch-events producer sends an encoded WatchEventsResponse of Berth's size, its send time in
 *   agent_id); they are written as they are, by identity serializers, to every open Watch stream
 *   in one loop, then the call is answered (empty). So each event costs the bare server what the
 *   stream writes cost: no decode, no encode, no storage. The trigger is a unary call from the same
 *   producer at the same rate as Berth's CreateWorkspace, so both servers also serve the
 *   producer's unary calls on the thread that fans out.
 * - `grpc.health.v1.Health/Check` answers SERVING (readiness, as for Berth).
 *
 * Backpressure is grpc-js's own: write() buffers inside the call when the client is slow.
 * Usage: node --import tsx bench/servers/bare-stream.ts <port>
 */
import * as grpc from "@grpc/grpc-js";
import { create, toBinary } from "@bufbuild/protobuf";
import { HealthCheckResponseSchema, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";

const port = Number(process.argv[2] ?? 0);
const SERVING = Buffer.from(toBinary(HealthCheckResponseSchema, create(HealthCheckResponseSchema, { status: HealthCheckResponse_ServingStatus.SERVING })));
const EMPTY = Buffer.alloc(0);
const identity = (b: Buffer) => b;
const method = (path: string, responseStream: boolean): grpc.MethodDefinition<Buffer, Buffer> => ({
  path,
  requestStream: false,
  responseStream,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity,
});

const streams = new Set<grpc.ServerWritableStream<Buffer, Buffer>>();

const server = new grpc.Server({ "grpc.enable_channelz": 0 });
server.addService(
  { Watch: method("/bench.BareStream/Watch", true), Publish: method("/bench.BareStream/Publish", false) },
  {
    Watch: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      streams.add(call);
      call.on("cancelled", () => streams.delete(call));
    },
    Publish: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      const message = call.request;
      for (const s of streams) s.write(message);
      callback(null, EMPTY);
    },
  },
);
server.addService(
  { Check: method("/grpc.health.v1.Health/Check", false) },
  { Check: (_call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => callback(null, SERVING) },
);
server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => {
  if (err) {
    console.error(err);
    process.exit(1);
  }
  console.log(JSON.stringify({ msg: "bare grpc-js stream serving", port: bound }));
});
process.on("SIGTERM", () => {
  for (const s of streams) s.end();
  server.tryShutdown(() => process.exit(0));
});
