/**
 * GetWorkspace's kept encoding (src/api/workspace-encoding.ts): what the gRPC bridge sends and
 * the message Connect encodes both equal a fresh encoding of workspaceToWire, call after call,
 * while last_active_at and any other field of the workspace move.
 */
import { create, equals, fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { GetWorkspaceResponseSchema } from "../../gen/berth/v1/workspace_service_pb.js";
import { encodedOf } from "../../src/api/constant-message.js";
import { workspaceToWire } from "../../src/api/wire.js";
import { getWorkspaceResponse } from "../../src/api/workspace-encoding.js";
import type { Workspace } from "../../src/sessions/workspace.js";

function workspace(): Workspace {
  return {
    workspaceId: "9d7c1a52-3f7e-4c1b-9a53-0c2b6f1e8a01",
    sessionId: "1f0e4a7b-6c2d-4e8f-8b1a-2d3c4b5a6f70",
    repoId: "c3b2a190-8f7e-4d6c-9b5a-4e3d2c1b0a9f",
    agentId: "agent",
    agentName: "agent-1",
    changeset: { id: "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", repoId: "c3b2a190-8f7e-4d6c-9b5a-4e3d2c1b0a9f", state: "draft", reason: "", createdAt: 1_700_000_000_000, updatedAt: 1_700_000_000_000, version: 0 },
    intent: "fix the bug",
    baseCommit: "main",
    mode: "persistent",
    expiresAt: 1_700_000_600_123,
    createdAt: 1_700_000_000_000,
    lastActiveAt: 1_700_000_000_000,
    lifecycle: "active",
    lifecycleReason: "",
    strandedAt: null,
    resumedFrom: null,
  };
}

function expectAnswers(ws: Workspace): void {
  const fresh = create(GetWorkspaceResponseSchema, { workspace: workspaceToWire(ws) });
  const answer = getWorkspaceResponse(ws);
  expect(equals(GetWorkspaceResponseSchema, answer, fresh)).toBe(true);
  const bytes = encodedOf(answer);
  expect(bytes).toBeDefined();
  expect(equals(GetWorkspaceResponseSchema, fromBinary(GetWorkspaceResponseSchema, bytes!), fresh)).toBe(true);
}

describe("GetWorkspace's kept encoding", () => {
  it("answers what a fresh encoding answers while last_active_at and the other fields move", () => {
    const ws = workspace();
    expectAnswers(ws);
    ws.lastActiveAt += 1_234;
    expectAnswers(ws);
    ws.baseCommit = "rebased";
    expectAnswers(ws);
    (ws.changeset as { state: string }).state = "submitted";
    ws.lastActiveAt += 1;
    expectAnswers(ws);
    ws.lifecycle = "stranded";
    ws.lifecycleReason = "lease";
    ws.strandedAt = ws.lastActiveAt + 5;
    expectAnswers(ws);
    ws.sessionId = "2e1f5b8c-7d3e-4f9a-9c2b-3e4d5c6b7a81";
    ws.resumedFrom = "1f0e4a7b-6c2d-4e8f-8b1a-2d3c4b5a6f70";
    expectAnswers(ws);
    expectAnswers({ ...ws, expiresAt: null });
  });
});
