/**
 * `berth mcp`: the MCP server over stdio, spawned as an agent starts its tools, driven by the MCP
 * SDK's own client; the token from BERTH_TOKEN, each tool an RPC to the server like any client's.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failure } from "../support/rpc-error.js";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { mcpWorld, overStdio, refusal, SCENARIO_TIMEOUT_MS, type McpWorld } from "./helpers.js";
import { agentScenario } from "./scenario.js";

describe("berth mcp (stdio)", () => {
  let world: McpWorld;
  const clients: Client[] = [];
  const open = async (...args: Parameters<typeof overStdio>) => {
    const c = await overStdio(...args);
    clients.push(c);
    return c;
  };
  beforeAll(async () => {
    world = await mcpWorld();
  });
  afterAll(async () => {
    for (const c of clients) await c.close();
    await world?.berth.close();
  });

  it("lists its tools, writes, reads back, claims, refuses another agent's claim with its holder, diffs and submits, bound to the session it created", async () => {
    const url = world.berth.server.httpUrl;
    const [alice, bob] = await Promise.all([open(url, "alice"), open(url, "bob")]);
    await agentScenario(world, { alice: [alice], bob, keepsBinding: true });
  }, SCENARIO_TIMEOUT_MS);

  it("without BERTH_TOKEN answers each tool with the RPC's refusal, UNAUTHENTICATED TOKEN_MISSING", async () => {
    const rpc = await failure(world.grpc("nobody").listRepositories({}));
    const nobody = await open(world.berth.server.httpUrl, "nobody");
    const text = await refusal(nobody, "create_session", { repo: world.repoName });
    expect(text.split("\n")[0]).toBe(`UNAUTHENTICATED TOKEN_MISSING: ${rpc.message}`);
  });

  it("refuses another agent's session with the RPC's code, reason and message", async () => {
    const repoId = (await world.grpc("alice").listRepositories({})).repositories.find((r) => r.name === world.repoName)!.id;
    const s = (await world.grpc("alice").createWorkspace({ repoId, baseCommit: "main", mode: WorkspaceMode.PERSISTENT })).workspace!;
    const rpc = await failure(world.grpc("bob").readFile({ sessionId: s.sessionId, path: "README.md" }));
    const bob = await open(world.berth.server.httpUrl, "bob", ["--session", s.sessionId]);
    const text = await refusal(bob, "read_file", { path: "README.md" });
    expect(text.split("\n")[0]).toBe(`${rpc.code} ${rpc.reason}: ${rpc.message}`);
  });
});
