import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { GrpcCallError } from "../support/grpc-client.js";
import { rpcLines, startHarness, waitFor, type Harness } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

async function grpcError(p: Promise<unknown>): Promise<GrpcCallError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GrpcCallError);
  return err as GrpcCallError;
}

async function connectError(p: Promise<unknown>): Promise<ConnectError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectError);
  return err as ConnectError;
}

describe("unary", () => {
  it("serves over grpc-js", async () => {
    const c = h.grpcClient();
    const res = await c.getWorkspace({ sessionId: "s-1" }, { metadata: { "x-test": "hdr" } });
    expect(res.workspace?.sessionId).toBe("s-1");
    expect(res.workspace?.intent).toBe("grpc");
    expect(res.workspace?.agentName).toBe("hdr");
    await waitFor(() => rpcLines(h.logs).some((l) => l["sessionId"] === "s-1"));
    const line = rpcLines(h.logs).find((l) => l["sessionId"] === "s-1")!;
    expect(line).toMatchObject({ method: "/berth.v1.WorkspaceService/GetWorkspace", code: "OK", protocol: "grpc", extra: "x" });
    expect(typeof line["durationMs"]).toBe("number");
    expect(rpcLines(h.logs).filter((l) => l["sessionId"] === "s-1")).toHaveLength(1);
  });

  it.each(["1.1", "2"] as const)("serves over connect (HTTP/%s)", async (v) => {
    const res = await h.connect(v, { "x-test": "c" }).getWorkspace({ sessionId: `c-${v}` });
    expect(res.workspace?.sessionId).toBe(`c-${v}`);
    expect(res.workspace?.intent).toBe("connect");
    expect(res.workspace?.agentName).toBe("c");
  });

  it.each(["1.1", "2"] as const)("serves over grpc-web (HTTP/%s)", async (v) => {
    const res = await h.grpcWeb(v).getWorkspace({ sessionId: "w" });
    expect(res.workspace?.intent).toBe("grpc-web");
  });

  it("serves gRPC on the HTTP port too", async () => {
    const res = await h.connectGrpc().getWorkspace({ sessionId: "g2" });
    expect(res.workspace?.intent).toBe("grpc");
  });

  it("unimplemented methods say so", async () => {
    const e = await grpcError(h.grpcClient().heartbeat({ sessionId: "x" }));
    expect(e.codeName).toBe("UNIMPLEMENTED");
  });
});

describe("errors", () => {
  it("grpc: code, ErrorInfo and BadRequest in grpc-status-details-bin", async () => {
    const e = await grpcError(h.grpcClient().getWorkspace({ sessionId: "bad" }));
    expect(e.codeName).toBe("INVALID_ARGUMENT");
    expect(e.details).toContain("invalid session_id");
    expect(e.status?.code).toBe(3);
    expect(e.errorInfo).toMatchObject({ reason: "INVALID_ARGUMENT", domain: "berth", metadata: { field: "session_id" } });
    expect(e.badRequest?.fieldViolations.map((v) => [v.field, v.reason])).toEqual([
      ["session_id", "UUID"],
      ["intent", "TOO_LONG"],
    ]);
  });

  it("grpc: NOT_FOUND with reason and metadata", async () => {
    const e = await grpcError(h.grpcClient().getWorkspace({ sessionId: "missing" }));
    expect(e.codeName).toBe("NOT_FOUND");
    expect(e.errorInfo?.reason).toBe("SESSION_NOT_FOUND");
    expect(e.errorInfo?.metadata).toEqual({ session_id: "missing" });
    expect(e.badRequest).toBeUndefined();
  });

  it.each(["connect", "grpc-web", "grpc"] as const)("%s on the HTTP port: same code and details", async (kind) => {
    const client = kind === "connect" ? h.connect("1.1") : kind === "grpc-web" ? h.grpcWeb() : h.connectGrpc();
    const e = await connectError(client.getWorkspace({ sessionId: "bad" }));
    expect(e.code).toBe(Code.InvalidArgument);
    expect(e.rawMessage).toContain("invalid session_id");
    const [info] = e.findDetails(ErrorInfoSchema);
    expect(info).toMatchObject({ reason: "INVALID_ARGUMENT", domain: "berth" });
    const [bad] = e.findDetails(BadRequestSchema);
    expect(bad?.fieldViolations.map((v) => v.field)).toEqual(["session_id", "intent"]);
    const nf = await connectError(client.getWorkspace({ sessionId: "missing" }));
    expect(nf.code).toBe(Code.NotFound);
    expect(nf.findDetails(ErrorInfoSchema)[0]?.reason).toBe("SESSION_NOT_FOUND");
  });

  it("INTERNAL hides the message on both transports and logs it", async () => {
    const e = await grpcError(h.grpcClient().getWorkspace({ sessionId: "boom" }));
    expect(e.codeName).toBe("INTERNAL");
    expect(e.details).toBe("internal error");
    expect(e.details).not.toContain("hunter2");
    const ce = await connectError(h.connect().getWorkspace({ sessionId: "boom" }));
    expect(ce.code).toBe(Code.Internal);
    expect(ce.rawMessage).toBe("internal error");
    await waitFor(() => h.logs.filter((l) => l["sessionId"] === "boom").length === 2);
    const lines = h.logs.filter((l) => l["sessionId"] === "boom");
    for (const l of lines) {
      expect(l["code"]).toBe("INTERNAL");
      expect(l["level"]).toBe(50);
      expect(JSON.stringify(l["err"])).toContain("hunter2");
    }
  });
});

describe("the log line of a failed call", () => {
  it("carries the reason and message, at info for the caller's mistakes", async () => {
    await connectError(h.connect().getWorkspace({ sessionId: "missing" }));
    await waitFor(() => h.logs.some((l) => l["sessionId"] === "missing" && l["protocol"] === "connect"));
    const line = h.logs.find((l) => l["sessionId"] === "missing" && l["protocol"] === "connect")!;
    expect(line["code"]).toBe("NOT_FOUND");
    expect(line["reason"]).toBe("SESSION_NOT_FOUND");
    expect(line["error"]).toBe("session missing not found");
    expect(line["level"]).toBe(30);
  });

  it("is at warn when the cause is on the server's side (UNAVAILABLE)", async () => {
    const e = await grpcError(h.grpcClient().getWorkspace({ sessionId: "down" }));
    expect(e.codeName).toBe("UNAVAILABLE");
    await waitFor(() => h.logs.some((l) => l["sessionId"] === "down"));
    const line = h.logs.find((l) => l["sessionId"] === "down")!;
    expect(line["level"]).toBe(40);
    expect(line["reason"]).toBe("SOURCE_UNREADABLE");
    expect(line["error"]).toBe("the repository's source could not be read");
  });
});

describe("deadline and cancellation", () => {
  it("grpc: deadline reaches the handler's signal and the client gets DEADLINE_EXCEEDED", async () => {
    const before = h.probe.aborts.length;
    const e = await grpcError(h.grpcClient().getWorkspace({ sessionId: "wait" }, { deadlineMs: 150 }));
    expect(e.codeName).toBe("DEADLINE_EXCEEDED");
    await waitFor(() => h.probe.aborts.length > before, 3000, "handler abort");
    expect((h.probe.aborts[before] as { kind?: string }).kind).toBe("deadline_exceeded");
    await waitFor(() => rpcLines(h.logs).some((l) => l["sessionId"] === "wait" && l["code"] === "DEADLINE_EXCEEDED" && l["protocol"] === "grpc"));
  });

  it("connect: deadline exceeded", async () => {
    const before = h.probe.aborts.length;
    const e = await connectError(h.connect("2").getWorkspace({ sessionId: "wait" }, { timeoutMs: 150 }));
    expect(e.code).toBe(Code.DeadlineExceeded);
    await waitFor(() => h.probe.aborts.length > before, 3000, "handler abort");
    expect((h.probe.aborts[before] as { kind?: string }).kind).toBe("deadline_exceeded");
  });

  it("grpc: a client cancel mid-call reaches the handler's signal and is logged CANCELLED", async () => {
    const before = h.probe.aborts.length;
    const ac = new AbortController();
    const p = h.grpcClient().getWorkspace({ sessionId: "wait" }, { signal: ac.signal });
    await waitFor(() => h.transports.pipeline.inflight.size > 0, 3000, "call in flight");
    ac.abort();
    const e = await grpcError(p);
    expect(e.codeName).toBe("CANCELLED");
    await waitFor(() => h.probe.aborts.length > before, 3000, "handler abort");
    expect((h.probe.aborts[before] as { kind?: string }).kind).toBe("cancelled");
    await waitFor(() => rpcLines(h.logs).some((l) => l["sessionId"] === "wait" && l["code"] === "CANCELLED" && l["protocol"] === "grpc"));
  });

  it("connect: a client cancel reaches the handler's signal", async () => {
    const before = h.probe.aborts.length;
    const ac = new AbortController();
    const p = h.connect("2").getWorkspace({ sessionId: "wait" }, { signal: ac.signal });
    await waitFor(() => h.transports.pipeline.inflight.size > 0, 3000, "call in flight");
    ac.abort();
    const e = await connectError(p);
    expect(e.code).toBe(Code.Canceled);
    await waitFor(() => h.probe.aborts.length > before, 3000, "handler abort");
    expect((h.probe.aborts[before] as { kind?: string }).kind).toBe("cancelled");
  });
});
