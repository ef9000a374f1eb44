/**
 * The MCP server over Streamable HTTP (/mcp on the HTTP port), driven by the MCP SDK's own
 * client, on one instance and on two behind per-call routing; authenticated as the RPCs are.
 */
import { describe, expect, it } from "vitest";
import { needs } from "../support/services.js";
import { failure } from "../support/rpc-error.js";
import { mcpSuite, overHttp, refusal, SCENARIO_TIMEOUT_MS, tool } from "./helpers.js";
import { agentScenario } from "./scenario.js";

describe("MCP over Streamable HTTP", () => {
  const suite = mcpSuite(overHttp);
  const open = suite.open;

  it("lists its tools, writes, reads back, claims, refuses another agent's claim with its holder, diffs and submits", async () => {
    const url = suite.world.berth.server.httpUrl;
    await agentScenario(suite.world, { alice: [await open(url, "alice")], bob: await open(url, "bob"), keepsBinding: false });
  }, SCENARIO_TIMEOUT_MS);

  it("claim_symbols and list_claims mark a claim of a symbol not defined yet as a reservation (issue 29)", async () => {
    const alice = await open(suite.world.berth.server.httpUrl, "alice");
    const s = await tool<{ session_id: string }>(alice, "create_session", { repo: suite.world.repoName });
    const claimed = await tool<{ claims: unknown[] }>(alice, "claim_symbols", { session_id: s.session_id, symbols: [{ path: "src/reserved.ts", symbol: "parse_header" }] });
    expect(claimed.claims).toEqual([{ path: "src/reserved.ts", symbol: "parse_header", not_yet_defined: true }]);
    const listed = await tool<{ claims: { symbol: string; not_yet_defined?: boolean }[] }>(alice, "list_claims", { session_id: s.session_id });
    expect(listed.claims).toEqual([expect.objectContaining({ symbol: "parse_header", not_yet_defined: true })]);
  });

  it("meters its requests by JSON-RPC method, tool and status, and each tool's RPCs as RPCs", async () => {
    const alice = await open(suite.world.berth.server.httpUrl, "alice");
    const s = await tool<{ session_id: string }>(alice, "create_session", { repo: suite.world.repoName });
    await alice.listTools();
    await tool(alice, "list_files", { session_id: s.session_id });
    const scraped = await (await fetch(suite.world.berth.server.metricsUrl!)).text();
    const count = (labels: string) => Number(new RegExp(`^${labels.replace(/[{}]/g, "\\$&")} (\\d+)$`, "m").exec(scraped)?.[1] ?? 0);
    expect(count('berth_mcp_request_duration_seconds_count{method="tools/list",tool="",status="200"}')).toBeGreaterThanOrEqual(1);
    expect(count('berth_mcp_request_duration_seconds_count{method="tools/call",tool="list_files",status="200"}')).toBeGreaterThanOrEqual(1);
    expect(count('berth_rpc_duration_seconds_count{method="/berth.v1.WorkspaceService/ListFiles",code="OK"}')).toBeGreaterThanOrEqual(1);
  });

  it("refuses a request without a token as the RPC is refused: UNAUTHENTICATED TOKEN_MISSING, with the RPC's message", async () => {
    const rpc = await failure(suite.world.grpc("nobody").listRepositories({}));
    expect(rpc).toMatchObject({ code: "UNAUTHENTICATED", reason: "TOKEN_MISSING" });
    const err = await overHttp(suite.world.berth.server.httpUrl, "nobody").then(
      () => undefined,
      (e: unknown) => e as Error & { code?: number },
    );
    expect(err?.code).toBe(401);
    expect(err?.message).toContain(`UNAUTHENTICATED TOKEN_MISSING: ${rpc.message}`);
    const line = suite.world.berth.logs.find((l) => l["msg"] === "mcp" && l["reason"] === "TOKEN_MISSING");
    expect(line).toMatchObject({ path: "/mcp", status: 401, code: "UNAUTHENTICATED" });
  });

  it("refuses another agent's session with the RPC's code, reason and message, and logs the RPC as any other", async () => {
    const alice = await open(suite.world.berth.server.httpUrl, "alice");
    const bob = await open(suite.world.berth.server.httpUrl, "bob");
    const mine = await tool<{ session_id: string }>(alice, "create_session", { repo: suite.world.repoName });
    const rpc = await failure(suite.world.grpc("bob").readFile({ sessionId: mine.session_id, path: "README.md" }));
    expect(rpc.code).toBe("PERMISSION_DENIED");
    const text = await refusal(bob, "read_file", { session_id: mine.session_id, path: "README.md" });
    expect(text.split("\n")[0]).toBe(`${rpc.code} ${rpc.reason}: ${rpc.message}`);
    // The tool's RPC went through the pipeline: its own log line, as the caller, with its outcome.
    const logged = suite.world.berth.logs.filter((l) => l["method"] === "/berth.v1.WorkspaceService/ReadFile" && l["sessionId"] === mine.session_id && l["code"] === "PERMISSION_DENIED");
    expect(logged.length).toBe(2);
  });

  it("list_comments shows the agent a reviewer's comment on its changeset, and resolve_comment closes it", async () => {
    const alice = await open(suite.world.berth.server.httpUrl, "alice");
    const s = await tool<{ session_id: string; changeset_id: string }>(alice, "create_session", { repo: suite.world.repoName });
    // Stateless HTTP keeps no binding between requests: each call names its session.
    const mine = { session_id: s.session_id };
    expect(await tool(alice, "list_comments", mine)).toEqual({ changeset_id: s.changeset_id, comments: [] });
    // ops reviews (an admin: not on the changeset, allowed to read it).
    const { comment } = await suite.world.grpc("ops").addComment({ changesetId: s.changeset_id, path: "README.md", line: 2, body: "say what the tool is for" });
    const listed = await tool<{ comments: Record<string, unknown>[] }>(alice, "list_comments", mine);
    expect(listed.comments).toEqual([expect.objectContaining({ id: comment!.id, path: "README.md", line: 2, body: "say what the tool is for", author: "ops", resolved: false })]);
    expect(await tool(alice, "resolve_comment", { comment_id: comment!.id })).toMatchObject({ id: comment!.id, resolved: true, resolved_by: "alice" });
    expect((await tool<{ comments: unknown[] }>(alice, "list_comments", mine)).comments).toEqual([]);
    expect((await tool<{ comments: unknown[] }>(alice, "list_comments", { ...mine, include_resolved: true })).comments).toHaveLength(1);
    // bob may not read alice's changeset: the RPC's refusal, as a tool error.
    const bob = await open(suite.world.berth.server.httpUrl, "bob");
    expect(await refusal(bob, "resolve_comment", { comment_id: comment!.id })).toMatch(/^PERMISSION_DENIED NOT_CHANGESET_OWNER/);
  });

  it("answers a stranded session with SESSION_STRANDED and the resume hint, and resume_session brings the work back", async () => {
    const alice = await open(suite.world.berth.server.httpUrl, "alice");
    const s = await tool<{ session_id: string }>(alice, "create_session", { repo: suite.world.repoName });
    await tool(alice, "write_file", { session_id: s.session_id, path: "new.txt", content: "kept\n", expected_hash: "" });
    await suite.world.grpc("alice").strandSession({ sessionId: s.session_id, reason: "agent went away" });
    const stranded = await refusal(alice, "write_file", { session_id: s.session_id, path: "new.txt", content: "lost?\n" });
    expect(stranded).toMatch(/^FAILED_PRECONDITION SESSION_STRANDED: /);
    expect(stranded).toContain("resume_session");
    const resumed = await tool<{ session_id: string; resumed_from: string }>(alice, "resume_session", { session_id: s.session_id });
    expect(resumed.resumed_from).toBe(s.session_id);
    expect(resumed.session_id).not.toBe(s.session_id);
    expect(await tool(alice, "read_file", { session_id: resumed.session_id, path: "new.txt" })).toMatchObject({ content: "kept\n", source: "overlay" });
  });

  it("answers a write over a path another agent changed and submitted since it was read with STALE_OVERLAY and what to do", async () => {
    const alice = await open(suite.world.berth.server.httpUrl, "alice");
    const bob = await open(suite.world.berth.server.httpUrl, "bob");
    const a = await tool<{ session_id: string }>(alice, "create_session", { repo: suite.world.repoName });
    const b = await tool<{ session_id: string }>(bob, "create_session", { repo: suite.world.repoName });
    await tool(alice, "read_file", { session_id: a.session_id, path: "notes.txt" });
    await tool(bob, "write_file", { session_id: b.session_id, path: "notes.txt", content: "bob's notes\n" });
    await tool(bob, "submit", { session_id: b.session_id });
    const stale = await refusal(alice, "write_file", { session_id: a.session_id, path: "notes.txt", content: "alice's notes\n" });
    expect(stale).toMatch(/^FAILED_PRECONDITION STALE_OVERLAY: notes\.txt was changed by agent-\d+/);
    expect(stale).toContain("read_file it again");
  });

  it("acts on the session named by ?session= when a call names none", async () => {
    const alice = await open(suite.world.berth.server.httpUrl, "alice");
    const s = await tool<{ session_id: string }>(alice, "create_session", { repo: suite.world.repoName });
    const bound = await open(suite.world.berth.server.httpUrl, "alice", `?session=${s.session_id}`);
    expect(await tool(bound, "get_session")).toMatchObject({ session_id: s.session_id, lifecycle_state: "active" });
    expect(await refusal(alice, "get_session")).toMatch(/NO_SESSION/);
  });
});

needs({ postgres: true })("MCP over Streamable HTTP on two instances", () => {
  const suite = mcpSuite(overHttp, { kind: "postgres", instances: 2 });

  it("serves one agent's work with each step on the other instance, and another agent's claim refused across them", async () => {
    const [one, two] = suite.world.berth.servers.map((s) => s.httpUrl) as [string, string];
    const alice = [await suite.open(one, "alice"), await suite.open(two, "alice")];
    const bob = await suite.open(two, "bob");
    await agentScenario(suite.world, { alice, bob, keepsBinding: false });
  }, SCENARIO_TIMEOUT_MS);
});
