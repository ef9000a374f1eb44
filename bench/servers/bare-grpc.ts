/**
 * The stack's limit: a bare @grpc/grpc-js server (same options as Berth's) with one no-op
 * unary handler on grpc.health.v1.Health/Check that answers a pre-encoded SERVING response.
 * Usage: node --import tsx bench/servers/bare-grpc.ts <port>
 */
import * as grpc from "@grpc/grpc-js";
import { create, toBinary } from "@bufbuild/protobuf";
import { HealthCheckResponseSchema, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";

const port = Number(process.argv[2] ?? 0);
const SERVING = Buffer.from(toBinary(HealthCheckResponseSchema, create(HealthCheckResponseSchema, { status: HealthCheckResponse_ServingStatus.SERVING })));
const identity = (b: Buffer) => b;

const server = new grpc.Server({ "grpc.enable_channelz": 0 });
server.addService(
  {
    Check: {
      path: "/grpc.health.v1.Health/Check",
      requestStream: false,
      responseStream: false,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    },
  },
  {
    Check: (_call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => callback(null, SERVING),
  },
);
server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => {
  if (err) {
    console.error(err);
    process.exit(1);
  }
  console.log(JSON.stringify({ msg: "bare grpc-js serving", port: bound }));
});
process.on("SIGTERM", () => server.tryShutdown(() => process.exit(0)));
