/**
 * Mounts the MCP server (src/mcp/) on the HTTP port at /mcp. Its tools call the
 * WorkspaceService through a Connect router transport over this server's own registrations and
 * Pipeline, in memory: every tool's RPC is authenticated, limited, handled, logged, metered and
 * traced exactly as the same RPC from the network (docs/decisions.md, "MCP over the pipeline").
 */
import { createClient, createRouterTransport } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { ServiceRegistration } from "../api/handler.js";
import { BerthError } from "../platform/errors.js";
import { mcpRoute, type McpRouteOptions } from "../mcp/http.js";
import type { Refusal } from "../mcp/refusals.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { addToConnectRouter } from "./connect-routes.js";
import type { Pipeline } from "./pipeline.js";
import { codeName, toRpcStatus } from "./status.js";

export function mcpHttpRoute(opts: {
  readonly registrations: readonly ServiceRegistration[];
  readonly pipeline: Pipeline;
  readonly publicServices: ReadonlySet<string>;
  readonly logger: Logger;
  readonly maxBodyBytes: number;
  readonly served?: McpRouteOptions["served"];
}): ReturnType<typeof mcpRoute> {
  const { pipeline } = opts;
  const transport = createRouterTransport((router) => addToConnectRouter(router, opts.registrations, pipeline, opts.publicServices), {
    router: { readMaxBytes: opts.maxBodyBytes },
  });
  return mcpRoute({
    client: createClient(WorkspaceService, transport),
    logger: opts.logger,
    maxBodyBytes: opts.maxBodyBytes,
    ...(opts.served ? { served: opts.served } : {}),
    // The pipeline's authenticator, as every RPC is authenticated: the same refusal, before any MCP work.
    async authenticate(header): Promise<Refusal | undefined> {
      if (pipeline.authenticator.fixedPrincipal !== undefined) return undefined;
      try {
        await pipeline.authenticator.authenticate(header);
        return undefined;
      } catch (err) {
        if (!(err instanceof BerthError)) throw err;
        return { code: codeName(toRpcStatus(err).status.code), reason: err.reason, message: err.message, details: err.metadata };
      }
    },
  });
}
