/**
 * An MCP client no one here wrote: the MCP inspector's CLI (@modelcontextprotocol/inspector-cli,
 * its `build/index.js`, the CLI mode of `npx @modelcontextprotocol/inspector --cli`) drives the
 * server over Streamable HTTP and over stdio (`berth mcp`).
 */
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, cliEnv } from "../cli/helpers.js";
import { mcpWorld, TOKENS, TOOL_NAMES, SCENARIO_TIMEOUT_MS, type McpWorld } from "./helpers.js";

const INSPECTOR = path.join(path.dirname(createRequire(import.meta.url).resolve("@modelcontextprotocol/inspector-cli/package.json")), "build/index.js");

/**
 * Run from its own build/ folder: it finds its package.json by a path relative to the working
 * directory (an existsSync of "../package.json") but imports it relative to its module.
 */
function inspector(args: readonly string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [INSPECTOR, ...args], { cwd: path.dirname(INSPECTOR), env: cliEnv(env), timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? -1) : 0, stdout, stderr });
    });
  });
}

describe("the MCP inspector's CLI", () => {
  let world: McpWorld;
  beforeAll(async () => {
    world = await mcpWorld();
  });
  afterAll(async () => {
    await world?.berth.close();
  });

  it("lists the tools over HTTP, creates a session, and writes and reads a file with it", async () => {
    const url = `${world.berth.server.httpUrl}/mcp`;
    const auth = ["--header", `Authorization: Bearer ${TOKENS.alice}`];
    const listed = await inspector([url, ...auth, "--method", "tools/list"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { tools: { name: string }[] }).tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES);

    const call = async (tool: string, ...pairs: string[]) => {
      const r = await inspector([url, ...auth, "--method", "tools/call", "--tool-name", tool, "--tool-arg", ...pairs]);
      expect(r.code, r.stderr).toBe(0);
      const result = JSON.parse(r.stdout) as { isError?: boolean; content: { text: string }[] };
      expect(result.isError ?? false, result.content[0]?.text).toBe(false);
      return JSON.parse(result.content[0]!.text) as Record<string, unknown>;
    };
    const s = await call("create_session", `repo=${world.repoName}`);
    await call("write_file", `session_id=${String(s["session_id"])}`, "path=hello.txt", "content=hi from the inspector");
    expect(await call("read_file", `session_id=${String(s["session_id"])}`, "path=hello.txt")).toMatchObject({ content: "hi from the inspector", source: "overlay" });
  }, SCENARIO_TIMEOUT_MS);

  it("lists the tools of `berth mcp` over stdio", async () => {
    // The server's command is the target; its environment is the inspector's.
    const listed = await inspector(["--method", "tools/list", process.execPath, BIN, "mcp"], { BERTH_SERVER: world.berth.server.httpUrl, BERTH_TOKEN: TOKENS.alice });
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { tools: { name: string }[] }).tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES);
  }, SCENARIO_TIMEOUT_MS);
});
