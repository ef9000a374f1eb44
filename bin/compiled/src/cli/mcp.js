import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { createBerthMcpServer } from "../mcp/tools.js";
import { cliFor } from "./client.js";
import { idOption } from "./ids.js";
export function registerMcp(program) {
    program
        .command("mcp")
        .description("serve Berth's tools to an agent over MCP on stdin/stdout (docs/agents.md); the token from BERTH_TOKEN")
        .addOption(idOption("session", "--session <id>", "the session the tools act on (default: BERTH_SESSION_ID, as `berth run` sets it; else the agent calls create_session or resume_session)"))
        .action(async (opts, command) => {
        const cli = cliFor(command);
        const session = opts.session ?? (process.env.BERTH_SESSION_ID?.trim() || undefined);
        const server = createBerthMcpServer({ client: cli.workspaces, ...(session ? { session } : {}) });
        const transport = new StdioServerTransport();
        const closed = new Promise((resolve) => (server.server.onclose = resolve));
        // The agent closing our stdin is the end of the conversation.
        process.stdin.once("end", () => void server.close());
        await server.connect(transport);
        await closed;
    });
}
