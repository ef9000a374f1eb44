/**
 * @berth/client: Berth's generated messages and services (from the repository's gen/, one
 * generation) and a thin typed wrapper (createBerthClient).
 */
export * from "../../../gen/berth/v1/event_pb.js";
export * from "../../../gen/berth/v1/types_pb.js";
export * from "../../../gen/berth/v1/turn_service_pb.js";
export * from "../../../gen/berth/v1/workspace_service_pb.js";
export { BadRequestSchema, ErrorInfoSchema, QuotaFailureSchema, RetryInfoSchema, type BadRequest, type ErrorInfo } from "../../../gen/google/rpc/error_details_pb.js";
export { Code, ConnectError, type Interceptor, type Transport } from "@connectrpc/connect";
export { createBerthClient, type BerthClient, type BerthClientOptions, type Protocol } from "./client.js";
export type { EventsOptions, EventsRequest, Reconnect } from "./events.js";
export { errorReason, isResumable, isTransient, isUnreachable, networkCause } from "./failures.js";
export type { HoldOptions, SessionHold } from "./hold.js";
export { isIdempotent } from "./idempotent.js";
export { backoffDelay, type BackoffOptions } from "./backoff.js";
export type { RetryOptions } from "./retry.js";
