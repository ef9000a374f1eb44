import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { TurnService } from "../../../gen/berth/v1/turn_service_pb.js";
import { WorkspaceService } from "../../../gen/berth/v1/workspace_service_pb.js";
import { resumingEvents } from "./events.js";
import { holdSession } from "./hold.js";
import { retryInterceptor } from "./retry.js";
function bearer(token) {
    return (next) => (req) => {
        req.header.set("authorization", `Bearer ${token}`);
        return next(req);
    };
}
function transportFor(options, interceptors) {
    const baseUrl = options.baseUrl.replace(/\/+$/, "");
    switch (options.protocol ?? "connect") {
        case "connect":
            return createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors });
        case "grpc-web":
            return createGrpcWebTransport({ baseUrl, httpVersion: "1.1", interceptors });
        case "grpc":
            return createGrpcTransport({ baseUrl, interceptors });
    }
}
/** The service's client, its unary methods given timeoutMs unless the call sets one (streams have none). */
function withDeadline(service, transport, timeoutMs) {
    const client = createClient(service, transport);
    if (timeoutMs <= 0)
        return client;
    const out = {};
    for (const method of service.methods) {
        const call = client[method.localName];
        out[method.localName] = method.methodKind === "unary" ? (req, opts) => call(req, { timeoutMs, ...opts }) : call;
    }
    return out;
}
export function createBerthClient(options) {
    const interceptors = [...(options.token ? [bearer(options.token)] : []), retryInterceptor(options.retry), ...(options.interceptors ?? [])];
    const transport = transportFor(options, interceptors);
    const timeoutMs = options.timeoutMs ?? 30_000;
    const workspaces = withDeadline(WorkspaceService, transport, timeoutMs);
    const turns = withDeadline(TurnService, transport, timeoutMs);
    return {
        baseUrl: options.baseUrl,
        transport,
        workspaces,
        turns,
        events: (request = {}, eventsOptions = {}) => resumingEvents(workspaces, request, eventsOptions),
        hold: (sessionId, holdOptions = {}) => holdSession(workspaces, sessionId, holdOptions),
    };
}
