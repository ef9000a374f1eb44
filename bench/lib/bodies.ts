/** Pre-encoded request bodies for the load generator. */
import { create, toBinary, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { HealthCheckRequestSchema } from "../../gen/grpc/health/v1/health_pb.js";
import { grpcFrame } from "./frame.js";

export function message<T extends DescMessage>(schema: T, init: MessageInitShape<T>): Uint8Array {
  return toBinary(schema, create(schema, init));
}

/** gRPC frame of a message (5-byte prefix + bytes). */
export function frame<T extends DescMessage>(schema: T, init: MessageInitShape<T>): Uint8Array {
  return grpcFrame(message(schema, init));
}

export const HEALTH_CHECK_FRAME: Uint8Array = frame(HealthCheckRequestSchema, {});
