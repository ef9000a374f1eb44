/**
 * A write's symbol diff is made against the path as PostgreSQL has it, not as this instance's
 * cache last saw it: the diff is started early against the cached row (issue 30: the parse runs
 * while the cache is checked), and taken only when the checked row is the same version.
 */
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { SymbolChangeKind, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { needs } from "../support/services.js";
import { gitRepo, tsModule, utf8 } from "./helpers.js";

needs({ postgres: true })("the symbol diff across instances", () => {
  let berth: TestBerth;
  beforeAll(async () => {
    berth = await startBerth({ instances: 2 });
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("reports the symbols changed since the other instance's write, not since the version this instance's cache held", async () => {
    const repoId = (await berth.grpc.registerRepository({ name: "symbols-two", sourcePath: gitRepo().dir })).repository!.id;
    const ws = (await berth.grpc.createWorkspace({ repoId, mode: WorkspaceMode.PERSISTENT, agentId: "diff-two" })).workspace!;
    const [a, b] = berth.servers.map((s) => createClient(WorkspaceService, createConnectTransport({ baseUrl: s.httpUrl, httpVersion: "1.1" }))) as [Client<typeof WorkspaceService>, Client<typeof WorkspaceService>];
    const path = "src/across.ts";
    const write = (c: Client<typeof WorkspaceService>, values: Parameters<typeof tsModule>[0]) => c.writeFile({ sessionId: ws.sessionId, path, content: utf8(tsModule(values)) });

    await write(a, { alpha: 10 }); // a's cache: alpha = 10
    const onB = await write(b, { alpha: 10, beta: 20 });
    expect(onB.symbols.map((s) => [s.name, s.change])).toEqual([["beta", SymbolChangeKind.MODIFIED]]);
    // Against a's cached version this write would change beta and gamma; against the row, gamma only.
    const onA = await write(a, { alpha: 10, beta: 20, gamma: 30 });
    expect(onA.symbols.map((s) => [s.name, s.change])).toEqual([["gamma", SymbolChangeKind.MODIFIED]]);
    // And the same instance's own next write diffs against its own last one.
    const again = await write(a, { alpha: 11, beta: 20, gamma: 30 });
    expect(again.symbols.map((s) => [s.name, s.change])).toEqual([["alpha", SymbolChangeKind.MODIFIED]]);
  });
});
