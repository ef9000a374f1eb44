/**
 * Requests refused before or at the handler still answer precisely: a JSON request with an
 * unknown field or enum name is refused by name (connect-node alone would drop it and the handler
 * would call the field missing), and a WriteFile over the file limit on the gRPC port gets
 * FILE_TOO_LARGE with its ErrorInfo, as on the HTTP port; both are logged and change nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBerth, type TestBerth } from "../support/berth.js";
import { failure } from "../support/rpc-error.js";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";

let b: TestBerth;
let repoId: string;
const LIMIT = 64 * 1024;

beforeAll(async () => {
  b = await startBerth({ env: { BERTH_MAX_FILE_BYTES: String(LIMIT) } });
  repoId = (await b.grpc.registerRepository({ name: `refusals-${Date.now()}` })).repository!.id;
});
afterAll(async () => {
  await b?.close();
});

async function postJson(method: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${b.server.httpUrl}/berth.v1.WorkspaceService/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

interface Violation {
  field: string;
  reason: string;
  description: string;
}
function violationsOf(json: Record<string, unknown>): Violation[] {
  const details = json["details"] as { type: string; debug: { fieldViolations?: Violation[] } }[];
  return details.find((d) => d.type === "google.rpc.BadRequest")?.debug.fieldViolations ?? [];
}

describe("JSON requests are read strictly", () => {
  it("an unknown enum name is INVALID_ARGUMENT naming the field, the value and the allowed names", async () => {
    const r = await postJson("CreateWorkspace", { repoId, agentId: "json-agent", mode: "WORKSPACE_MODE_FOREVER" });
    expect(r.status).toBe(400);
    expect(r.json["code"]).toBe("invalid_argument");
    const [v] = violationsOf(r.json);
    expect(v).toMatchObject({ field: "mode", reason: "UNKNOWN_ENUM_VALUE" });
    expect(v!.description).toContain('"WORKSPACE_MODE_FOREVER"');
    expect(v!.description).toContain("WORKSPACE_MODE_EPHEMERAL");
    expect(v!.description).toContain("WORKSPACE_MODE_PERSISTENT");
    expect(String(r.json["message"])).toContain("WORKSPACE_MODE_FOREVER");
    const sessions = await b.grpc.listSessions({ repoId });
    expect(sessions.sessions).toHaveLength(0);
  });

  it("an unknown field is INVALID_ARGUMENT naming it, and a correct request still works", async () => {
    const r = await postJson("CreateWorkspace", { repoId, agentId: "json-agent", mode: "WORKSPACE_MODE_EPHEMERAL", baseCommit: "abc123", intnet: "typo" });
    expect(r.status).toBe(400);
    const [v] = violationsOf(r.json);
    expect(v).toMatchObject({ field: "intnet", reason: "UNKNOWN_FIELD" });
    expect(v!.description).toContain("intent");
    const ok = await postJson("CreateWorkspace", { repoId, agentId: "json-agent", mode: "WORKSPACE_MODE_EPHEMERAL", baseCommit: "abc123", intent: "fine" });
    expect(ok.status).toBe(200);
  });

  it("the refusal is logged like any failed call", async () => {
    await postJson("GetWorkspace", { sessionId: "00000000-0000-4000-8000-000000000000", bogus: 1 });
    const line = b.logs.find((l) => l["method"] === "/berth.v1.WorkspaceService/GetWorkspace" && l["code"] === "INVALID_ARGUMENT" && String(l["error"]).includes("bogus"));
    expect(line).toBeDefined();
    expect(line!["reason"]).toBe("INVALID_ARGUMENT");
    expect(line!["protocol"]).toBe("connect");
  });
});

describe("a WriteFile over the file limit", () => {
  it("gets RESOURCE_EXHAUSTED FILE_TOO_LARGE with its ErrorInfo on the gRPC port, and stores nothing", async () => {
    const ws = await b.grpc.createWorkspace({ repoId, agentId: "big-writer", baseCommit: "abc123", mode: WorkspaceMode.EPHEMERAL });
    const sessionId = ws.workspace!.sessionId;
    // Over BERTH_MAX_FILE_BYTES + 1 MiB: the old transport cap answered this without any detail.
    const size = LIMIT + 1024 * 1024 + 1;
    const f = await failure(b.grpc.writeFile({ sessionId, path: "big.bin", content: new Uint8Array(size) }));
    expect(f.code).toBe("RESOURCE_EXHAUSTED");
    expect(f.reason).toBe("FILE_TOO_LARGE");
    expect(f.metadata).toMatchObject({ path: "big.bin", size_bytes: String(size), limit_bytes: String(LIMIT) });
    const line = b.logs.find((l) => l["method"] === "/berth.v1.WorkspaceService/WriteFile" && l["reason"] === "FILE_TOO_LARGE");
    expect(line).toBeDefined();
    const files = await b.grpc.listFiles({ sessionId });
    expect(files.entries.map((x) => x.path)).not.toContain("big.bin");
  });
});
