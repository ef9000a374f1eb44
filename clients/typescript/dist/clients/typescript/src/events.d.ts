/**
 * WatchEvents as an async iterator that survives disconnects: when the connection drops or the
 * server ends the stream (UNAVAILABLE on shutdown, RESOURCE_EXHAUSTED for a subscriber that fell
 * behind), it opens the stream again after the last seq it yielded, so no event is yielded twice
 * and none is skipped. A failure before the first stream was accepted is thrown (the server is
 * not there, or refused the request): retrying it would hide a wrong address or a bad filter.
 */
import type { Client } from "@connectrpc/connect";
import type { Event } from "../../../gen/berth/v1/event_pb.js";
import type { WatchEventsRequest, WorkspaceService } from "../../../gen/berth/v1/workspace_service_pb.js";
import { type BackoffOptions } from "./backoff.js";
export type EventsRequest = Partial<Pick<WatchEventsRequest, "afterSeq" | "repoIds" | "kinds" | "excludeSessionId">>;
export interface Reconnect {
    /** Events after this seq are asked for next. */
    readonly afterSeq: bigint;
    /** What ended the last stream; undefined when the server ended it without an error. */
    readonly error: unknown;
    /** How long it waits before opening the stream again, in milliseconds. */
    readonly delayMs: number;
}
export interface EventsOptions extends BackoffOptions {
    /** Ends the iteration (it returns, it does not throw). */
    readonly signal?: AbortSignal;
    /** Told before each reconnect. */
    readonly onReconnect?: (r: Reconnect) => void;
    /** Told when the server accepts a stream (the first time, and after each reconnect). */
    readonly onConnect?: () => void;
}
export declare function resumingEvents(workspaces: Client<typeof WorkspaceService>, request: EventsRequest, options?: EventsOptions): AsyncGenerator<Event>;
