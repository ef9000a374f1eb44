import { type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import type { Event } from "../../../gen/berth/v1/event_pb.js";
import { TurnService } from "../../../gen/berth/v1/turn_service_pb.js";
import { WorkspaceService } from "../../../gen/berth/v1/workspace_service_pb.js";
import { type EventsOptions, type EventsRequest } from "./events.js";
import { type HoldOptions, type SessionHold } from "./hold.js";
import { type RetryOptions } from "./retry.js";
export type Protocol = "connect" | "grpc-web" | "grpc";
export interface BerthClientOptions {
    /** The server: http(s)://host:port — the HTTP port (BERTH_HTTP_ADDR) for connect and grpc-web, the gRPC port (BERTH_ADDR) for grpc. */
    readonly baseUrl: string;
    /** Default "connect". */
    readonly protocol?: Protocol;
    /** Sent as "authorization: Bearer …" when auth is on. */
    readonly token?: string;
    /** The deadline of a unary call that sets none, in milliseconds (default 30000; 0: none). Retries happen within it. */
    readonly timeoutMs?: number;
    /** Retries of idempotent unary calls (default: 4 attempts). */
    readonly retry?: RetryOptions;
    /** Run after the client's own (the token, retries). */
    readonly interceptors?: readonly Interceptor[];
}
export interface BerthClient {
    readonly baseUrl: string;
    readonly transport: Transport;
    readonly workspaces: Client<typeof WorkspaceService>;
    readonly turns: Client<typeof TurnService>;
    /** WatchEvents, resumed after a disconnect from the last seq yielded (events.ts). */
    events(request?: EventsRequest, options?: EventsOptions): AsyncGenerator<Event>;
    /** Keeps a session connected until close() (hold.ts). */
    hold(sessionId: string, options?: HoldOptions): SessionHold;
}
export declare function createBerthClient(options: BerthClientOptions): BerthClient;
