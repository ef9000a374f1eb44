/**
 * ReadFile as an MCP tool: `tools/call` of read_file, one JSON-RPC POST to /mcp on the HTTP port
 * (stateless Streamable HTTP, JSON answer), alternately with the same ReadFile over Connect
 * (binary application/proto) on the same server. Both over h2c, 64 sessions with one 1 KiB file
 * each, the same in flight. The difference is the MCP layer: a JSON-RPC parse, a new MCP server
 * per request, the tool's ReadFile through the server's own pipeline in memory (a Connect router
 * transport), and the answer as JSON text.
 */
import { describeLoad, runLoad } from "../loadgen/index.js";
import { message } from "../lib/bodies.js";
import { createBenchDatabase } from "../lib/database.js";
import { populate, SERVICE } from "../lib/fixtures.js";
import { mapLimit, RpcClient } from "../lib/rpc.js";
import { round, sideBySide, type Scenario } from "../lib/scenario.js";
import { startBerth } from "../lib/servers.js";
import { ReadFileRequestSchema, WriteFileRequestSchema, WriteFileResponseSchema } from "../../gen/berth/v1/workspace_service_pb.js";

const SESSIONS = 64;
/** One path per session: a write claims its file, and sessions of one repository may not share a claim. */
const pathOf = (i: number) => `notes/read-me-${i}.txt`;
const CONTENT = new TextEncoder().encode("a line of text that an agent reads back\n".repeat(26).slice(0, 1024));

export const scenario: Scenario = {
  name: "mcp-read-file",
  title: "MCP tools/call read_file over HTTP (/mcp) beside the same ReadFile over Connect",
  async run(ctx) {
    const db = await createBenchDatabase();
    const berth = await startBerth({ databaseUrl: db.url, cpuProfDir: ctx.cpuProfDir });
    try {
      const { sessionIds } = await populate(berth.grpcUrl, SESSIONS);
      const client = new RpcClient(berth.grpcUrl);
      try {
        await mapLimit(sessionIds, 16, (sessionId, i) => client.unary(`${SERVICE}/WriteFile`, WriteFileRequestSchema, WriteFileResponseSchema, { sessionId, path: pathOf(i), content: CONTENT }));
      } finally {
        client.close();
      }
      const connectBodies = sessionIds.map((sessionId, i) => message(ReadFileRequestSchema, { sessionId, path: pathOf(i) }));
      const mcpBodies = sessionIds.map((sessionId, i) =>
        new TextEncoder().encode(JSON.stringify({ jsonrpc: "2.0", id: i + 1, method: "tools/call", params: { name: "read_file", arguments: { session_id: sessionId, path: pathOf(i) } } })),
      );
      const base = { connections: 2, concurrency: 16, warmupMs: ctx.warmupMs, durationMs: ctx.durationMs };
      const s = await sideBySide(
        ctx,
        {
          connect: () => runLoad({ ...base, kind: "connect", url: berth.httpUrl, path: `${SERVICE}/ReadFile`, bodies: connectBodies }),
          mcp: () => runLoad({ ...base, kind: "mcp", url: berth.httpUrl, path: "/mcp", bodies: mcpBodies }),
        },
        (l, r) => ctx.log(`${l.padEnd(8)} ${describeLoad(r)}`),
      );
      return {
        rows: [
          {
            figure: `read_file as MCP tools/call over HTTP, ${SESSIONS} sessions, 1 KiB file, 16 in flight / 2 conn`,
            value: s.throughput.mcp!,
            unit: "req/s",
            baseline: { name: "ReadFile over Connect", value: s.throughput.connect!, unit: "req/s" },
            ratio: round(s.ratio("mcp", "connect")),
          },
        ],
        commands: [berth.command],
        runs: s.runs,
      };
    } finally {
      await berth.stop();
      await db.drop();
    }
  },
};
