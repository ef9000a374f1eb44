/**
 * berth mcp — Berth's tools (src/mcp/tools.ts) served over MCP on stdin/stdout, for an agent
 * that starts its tools as a child process. A client like every other command: the server from
 * --server / BERTH_SERVER, the token from BERTH_TOKEN, each tool one or a few RPCs.
 */
import type { Command } from "commander";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { createBerthMcpServer } from "../mcp/tools.js";
import { cliFor } from "./client.js";
import { idOption } from "./ids.js";

export function registerMcp(program: Command): void {
  program
    .command("mcp")
    .description("serve Berth's tools to an agent over MCP on stdin/stdout (docs/agents.md); the token from BERTH_TOKEN")
    .addOption(idOption("session", "--session <id>", "the session the tools act on (default: BERTH_SESSION_ID, as `berth run` sets it; else the agent calls create_session or resume_session)"))
    .action(async (opts: { session?: string }, command: Command) => {
      const cli = cliFor(command);
      const session = opts.session ?? (process.env.BERTH_SESSION_ID?.trim() || undefined);
      const server = createBerthMcpServer({ client: cli.workspaces, ...(session ? { session } : {}) });
      const transport = new StdioServerTransport();
      const closed = new Promise<void>((resolve) => (server.server.onclose = resolve));
      // The agent closing our stdin is the end of the conversation.
      process.stdin.once("end", () => void server.close());
      await server.connect(transport);
      await closed;
    });
}
