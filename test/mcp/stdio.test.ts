/**
 * `berth mcp`: the MCP server over stdio, spawned as an agent starts its tools, driven by the MCP
 * SDK's own client; the token from BERTH_TOKEN, each tool an RPC to the server like any client's.
 */
import { describe, expect, it } from "vitest";
import { failure } from "../support/rpc-error.js";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { mcpSuite, overStdio, refusal, SCENARIO_TIMEOUT_MS } from "./helpers.js";
import { agentScenario } from "./scenario.js";

describe("berth mcp (stdio)", () => {
  const suite = mcpSuite(overStdio);
  const open = suite.open;

  it("lists its tools, writes, reads back, claims, refuses another agent's claim with its holder, diffs and submits, bound to the session it created", async () => {
    const url = suite.world.berth.server.httpUrl;
    const [alice, bob] = await Promise.all([open(url, "alice"), open(url, "bob")]);
    await agentScenario(suite.world, { alice: [alice], bob, keepsBinding: true });
  }, SCENARIO_TIMEOUT_MS);

  it("without BERTH_TOKEN answers each tool with the RPC's refusal, UNAUTHENTICATED TOKEN_MISSING", async () => {
    const rpc = await failure(suite.world.grpc("nobody").listRepositories({}));
    const nobody = await open(suite.world.berth.server.httpUrl, "nobody");
    const text = await refusal(nobody, "create_session", { repo: suite.world.repoName });
    expect(text.split("\n")[0]).toBe(`UNAUTHENTICATED TOKEN_MISSING: ${rpc.message}`);
  });

  it("refuses another agent's session with the RPC's code, reason and message", async () => {
    const repoId = (await suite.world.grpc("alice").listRepositories({})).repositories.find((r) => r.name === suite.world.repoName)!.id;
    const s = (await suite.world.grpc("alice").createWorkspace({ repoId, baseCommit: "main", mode: WorkspaceMode.PERSISTENT })).workspace!;
    const rpc = await failure(suite.world.grpc("bob").readFile({ sessionId: s.sessionId, path: "README.md" }));
    const bob = await open(suite.world.berth.server.httpUrl, "bob", ["--session", s.sessionId]);
    const text = await refusal(bob, "read_file", { path: "README.md" });
    expect(text.split("\n")[0]).toBe(`${rpc.code} ${rpc.reason}: ${rpc.message}`);
  });
});
