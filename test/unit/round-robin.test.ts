/**
 * The round robin of the two-instance mode (test/support/instances.ts): each call, and each new
 * stream, goes to the next instance, whichever client sends it — checked in each server's own
 * log lines.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { Rotation, clusterAt, nextHttpUrl, registerCluster, unregisterCluster } from "../support/instances.js";
import { failure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";

describe("Rotation", () => {
  it("hands out the instances in turn, starting with the first", () => {
    const r = new Rotation(["a:1", "b:2"], ["http://a:1", "http://b:2"]);
    expect(Array.from({ length: 5 }, () => r.next())).toEqual([0, 1, 0, 1, 0]);
  });

  it("makes the first instance's addresses mean the cluster, for the CLI's URL too, until unregistered", () => {
    const r = new Rotation(["127.0.0.1:7001", "127.0.0.1:7002"], ["http://127.0.0.1:8001", "http://127.0.0.1:8002"]);
    registerCluster(r);
    try {
      expect(clusterAt("127.0.0.1:7001")).toBe(r);
      expect(clusterAt("http://127.0.0.1:8001/")).toBe(r);
      // The second instance's own address is that instance only.
      expect(clusterAt("127.0.0.1:7002")).toBeUndefined();
      expect([nextHttpUrl("http://127.0.0.1:8001"), nextHttpUrl("http://127.0.0.1:8001"), nextHttpUrl("http://127.0.0.1:8001")]).toEqual([
        "http://127.0.0.1:8001",
        "http://127.0.0.1:8002",
        "http://127.0.0.1:8001",
      ]);
    } finally {
      unregisterCluster(r);
    }
    expect(nextHttpUrl("http://127.0.0.1:8001")).toBe("http://127.0.0.1:8001");
  });

  it("a cluster of one is no cluster: its address is left alone", () => {
    const r = new Rotation(["127.0.0.1:7003"], ["http://127.0.0.1:8003"]);
    registerCluster(r);
    try {
      expect(clusterAt("127.0.0.1:7003")).toBeUndefined();
    } finally {
      unregisterCluster(r);
    }
  });
});

needs({ postgres: true })("two instances behind the clients' round robin", () => {
  let berth: TestBerth;
  beforeAll(async () => {
    berth = await startBerth({ instances: 2 });
  });
  afterAll(async () => {
    await berth?.close();
  });

  /** The session ids of `method`'s rpc lines in instance i's log. */
  const sessionsSeen = (i: number, method: string) =>
    berth.instanceLogs[i]!.filter((l) => l["msg"] === "rpc" && l["method"] === `/berth.v1.WorkspaceService/${method}`).map((l) => String(l["sessionId"]));

  it("starts two servers on one database, with distinct instance names", () => {
    expect(berth.servers).toHaveLength(2);
    expect(berth.server).toBe(berth.servers[0]);
    expect(berth.servers[0]!.grpcAddress).not.toBe(berth.servers[1]!.grpcAddress);
    const names = berth.instanceLogs.map((logs) => logs.find((l) => l["msg"] === "startup reconcile")?.["instanceName"]);
    expect(names[0]).toMatch(/^berth-test-[0-9a-f]+-1$/);
    expect(names[1]).toMatch(/^berth-test-[0-9a-f]+-2$/);
    // Both instances' lines, together.
    expect(berth.logs.filter((l) => l["msg"] === "startup reconcile")).toHaveLength(2);
  });

  it("sends each unary call to the next instance, over gRPC, Connect and gRPC-Web, on one turn", async () => {
    const ids = Array.from({ length: 6 }, () => randomUUID());
    const clients = [berth.grpc, berth.connect, berth.grpcWeb];
    for (const [k, sessionId] of ids.entries()) {
      expect(await failure(clients[k % 3]!.getWorkspace({ sessionId }))).toMatchObject({ code: "NOT_FOUND" });
    }
    await vi.waitFor(() => expect(sessionsSeen(0, "GetWorkspace").length + sessionsSeen(1, "GetWorkspace").length).toBe(6));
    expect(sessionsSeen(0, "GetWorkspace")).toEqual([ids[0], ids[2], ids[4]]);
    expect(sessionsSeen(1, "GetWorkspace")).toEqual([ids[1], ids[3], ids[5]]);
  });

  it("a client made on the first instance's address rotates on the same turn; one on the second's stays there", async () => {
    const cluster = createGrpcClient(WorkspaceService, berth.server.grpcAddress);
    const second = createGrpcClient(WorkspaceService, berth.servers[1]!.grpcAddress);
    try {
      const ids = Array.from({ length: 4 }, () => randomUUID());
      for (const sessionId of ids) await failure(cluster.destroyWorkspace({ sessionId }));
      const alone = randomUUID();
      await failure(second.destroyWorkspace({ sessionId: alone }));
      await vi.waitFor(() => expect(sessionsSeen(0, "DestroyWorkspace").length + sessionsSeen(1, "DestroyWorkspace").length).toBe(5));
      expect(sessionsSeen(0, "DestroyWorkspace")).toEqual([ids[0], ids[2]]);
      expect(sessionsSeen(1, "DestroyWorkspace")).toEqual([ids[1], ids[3], alone]);
    } finally {
      cluster.close();
      second.close();
    }
  });

  it("opens each new stream on the next instance", async () => {
    const count = (i: number) => berth.instanceLogs[i]!.filter((l) => l["msg"] === "rpc" && l["method"] === "/berth.v1.WorkspaceService/WatchEvents").length;
    const drain = async (s: AsyncIterable<unknown>) => {
      for await (const _ of s) void _;
    };
    // A stream the server refuses at once (a bad filter): it starts, is logged, and ends.
    for (const client of [berth.grpc, berth.connect, berth.grpc, berth.grpcWeb]) {
      expect(await failure(drain(client.watchEvents({ repoIds: ["not-a-uuid"] })))).toMatchObject({ code: "INVALID_ARGUMENT" });
    }
    await vi.waitFor(() => expect(count(0) + count(1)).toBe(4));
    expect([count(0), count(1)]).toEqual([2, 2]);
  });
});
