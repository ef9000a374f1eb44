/**
 * The work of one agent through MCP, run by each transport's test: list tools, create a
 * session, write a file, read it back, claim a symbol, see another agent's claim refused with
 * its reason as tool text, get the diff, submit; checked against the server through gRPC.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { expect } from "vitest";
import { ChangesetState } from "../../gen/berth/v1/types_pb.js";
import { sha, BASE_FILES } from "../landing/helpers.js";
import { refusal, tool, TOOL_NAMES, type McpWorld } from "./helpers.js";

export interface ScenarioClients {
  /** Alice's clients: each step uses the next (several instances: each on another). */
  readonly alice: readonly Client[];
  readonly bob: Client;
  /** The connection keeps the session create_session bound (stdio); else every call names it (stateless HTTP). */
  readonly keepsBinding: boolean;
}

export async function agentScenario(world: McpWorld, clients: ScenarioClients): Promise<void> {
  let turn = 0;
  const alice = () => clients.alice[turn++ % clients.alice.length]!;
  const { tools } = await alice().listTools();
  expect(tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES);
  for (const t of tools) {
    expect(t.description?.length, t.name).toBeGreaterThan(40);
    expect(t.inputSchema.type).toBe("object");
  }

  const created = await tool<{ session_id: string; changeset_id: string; agent_name: string; agent_id: string }>(alice(), "create_session", { repo: world.repoName, intent: "raise the answer" });
  expect(created.agent_id).toBe("alice");
  const s = clients.keepsBinding ? {} : { session_id: created.session_id };

  const written = await tool<{ hash: string; change: string }>(alice(), "write_file", { ...s, path: "src/app.ts", content: "export const answer = 42;\n", expected_hash: sha(BASE_FILES["src/app.ts"]!) });
  expect(written).toMatchObject({ hash: sha("export const answer = 42;\n"), change: "modified" });
  const read = await tool<{ content: string; hash: string; source: string }>(alice(), "read_file", { ...s, path: "src/app.ts" });
  expect(read).toEqual({ path: "src/app.ts", content: "export const answer = 42;\n", encoding: "utf-8", hash: written.hash, source: "overlay" });

  const claimed = await tool<{ claims: { path: string; symbol: string }[] }>(alice(), "claim_symbols", { ...s, symbols: [{ path: "src/app.ts", symbol: "answer" }] });
  expect(claimed.claims).toEqual([{ path: "src/app.ts", symbol: "answer" }]);

  // Bob's session on the same repository: Alice's claim is refused with its reason and holder, as tool text.
  const bobs = await tool<{ session_id: string }>(clients.bob, "create_session", { repo: world.repoName, intent: "also tasks" });
  const locked = await refusal(clients.bob, "claim_symbols", { session_id: bobs.session_id, symbols: [{ path: "src/app.ts", symbol: "answer" }] });
  expect(locked).toMatch(/^FAILED_PRECONDITION SYMBOL_LOCKED: .*claimed by agent-\d+ \(session /);
  expect(locked).toContain(created.agent_name);
  expect(locked).toContain(created.session_id);

  const diff = await tool<{ paths: { path: string; change: string; added: number; removed: number }[]; patch: string }>(alice(), "diff_workspace", s);
  expect(diff.paths).toEqual([expect.objectContaining({ path: "src/app.ts", change: "modified", added: 1, removed: 1 })]);
  expect(diff.patch).toContain("+export const answer = 42;");

  const submitted = await tool<{ state: string; unchanged: boolean }>(alice(), "submit", s);
  expect(submitted).toMatchObject({ changeset_id: created.changeset_id, state: "submitted", unchanged: false });
  const { workspace } = await world.grpc("alice").getWorkspace({ sessionId: created.session_id });
  expect(workspace?.changesetState).toBe(ChangesetState.SUBMITTED);
}
