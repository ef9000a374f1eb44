/**
 * BeginTurn's and GetWorkspaceMap's kept map encoding (src/api/map-encoding.ts): what the gRPC
 * bridge sends and the message Connect encodes both equal a fresh encoding of mapToWire, for
 * every status, turn after turn, while the other fields move; one map is encoded once.
 */
import { create, equals, fromBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { BeginTurnResponseSchema, GetWorkspaceMapResponseSchema } from "../../gen/berth/v1/turn_service_pb.js";
import { encodedOf } from "../../src/api/constant-message.js";
import { mapToWire, responseWithMap } from "../../src/api/map-encoding.js";
import type { MapResult, WorkspaceMap } from "../../src/turns/map/index.js";

function map(n: number): WorkspaceMap {
  const entries = Array.from({ length: n }, (_, i) => ({ path: `src/dir-${i % 7}/file-${i}.ts`, isDir: i % 10 === 0 }));
  return { root: "/envs/x", text: entries.map((e) => e.path).join("\n"), entries, shown: n, total: n + 3, truncated: true, maxDepth: 8, builtAt: 1_700_000_000_000 };
}

const RESULTS: MapResult[] = [
  { status: "ok", map: map(1000) },
  { status: "stale", map: map(5), why: "walk_in_flight" },
  { status: "over_budget" },
  { status: "skipped", reason: "home_directory" },
  { status: "cancelled" },
  { status: "failed", code: "EACCES", message: "permission denied" },
];

describe("a workspace map's kept encoding", () => {
  it.each(RESULTS.map((r) => [r.status, r] as const))("BeginTurn with a %s map: the kept bytes and the message equal a fresh encoding", (_, r) => {
    for (const [i, warm] of [true, false, true].entries()) {
      const fields = { turnId: `0f7d3c0e-3c4d-4b7e-9a0e-1d2c3b4a5f6${i}`, environmentPath: i === 1 ? "" : "/envs/x", warm, supersededTurnId: i === 2 ? "a-turn" : "" };
      const fresh = create(BeginTurnResponseSchema, { ...fields, workspaceMap: mapToWire(r) });
      const answer = responseWithMap(BeginTurnResponseSchema, fields, "workspaceMap", r);
      expect(equals(BeginTurnResponseSchema, answer, fresh)).toBe(true);
      const bytes = encodedOf(answer);
      if (r.status === "ok" || r.status === "stale") {
        expect(bytes).toBeDefined();
        expect(equals(BeginTurnResponseSchema, fromBinary(BeginTurnResponseSchema, bytes!), fresh)).toBe(true);
      } else {
        expect(bytes).toBeUndefined();
      }
    }
  });

  it("one map answered many times is made once per status: the same frozen message, ok and stale apart", () => {
    const m = map(50);
    const a = responseWithMap(GetWorkspaceMapResponseSchema, {}, "workspaceMap", { status: "ok", map: m });
    const b = responseWithMap(GetWorkspaceMapResponseSchema, {}, "workspaceMap", { status: "ok", map: m });
    const stale = responseWithMap(GetWorkspaceMapResponseSchema, {}, "workspaceMap", { status: "stale", map: m, why: "over_budget" });
    expect(a.workspaceMap).toBe(b.workspaceMap);
    expect(Object.isFrozen(a.workspaceMap)).toBe(true);
    expect(stale.workspaceMap).not.toBe(a.workspaceMap);
    expect(stale.workspaceMap?.reason).toBe("over_budget");
    expect(equals(GetWorkspaceMapResponseSchema, fromBinary(GetWorkspaceMapResponseSchema, encodedOf(stale)!), create(GetWorkspaceMapResponseSchema, { workspaceMap: mapToWire({ status: "stale", map: m, why: "over_budget" }) }))).toBe(true);
  });
});
