/**
 * @berth/client: Berth's generated messages and services (from the repository's gen/, one
 * generation) and a thin typed wrapper (createBerthClient).
 */
export * from "../../../gen/berth/v1/event_pb.js";
export * from "../../../gen/berth/v1/types_pb.js";
export * from "../../../gen/berth/v1/turn_service_pb.js";
export * from "../../../gen/berth/v1/workspace_service_pb.js";
export { BadRequestSchema, ErrorInfoSchema, QuotaFailureSchema, RetryInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
export { Code, ConnectError } from "@connectrpc/connect";
export { createBerthClient } from "./client.js";
export { errorReason, isResumable, isTransient, isUnreachable, networkCause } from "./failures.js";
export { isIdempotent } from "./idempotent.js";
export { backoffDelay } from "./backoff.js";
