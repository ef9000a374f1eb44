import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import path from "node:path";
import { createClient, Code, type ConnectError } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Health, HealthCheckResponse_ServingStatus as S } from "../../gen/grpc/health/v1/health_pb.js";
import * as reflV1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as reflV1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { createGrpcClient, type GrpcCallError } from "../support/grpc-client.js";
import { rpcLines, startHarness, waitFor, type Harness } from "./harness.js";

const run = promisify(execFile);
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

describe("server streaming", () => {
  it("grpc: a slow reader applies backpressure; breaking out cancels the handler", async () => {
    const c = h.grpcClient();
    const closedBefore = h.probe.streamClosed;
    const produced0 = h.probe.streamProduced;
    let received = 0;
    for await (const r of c.watchEvents({ afterSeq: 10n })) {
      received++;
      if (received === 1) expect(r.event?.seq).toBe(11n);
      if (received === 3) {
        // Do not read for a while: the handler must stop producing (bounded by flow control).
        await new Promise((r) => setTimeout(r, 300));
        const p1 = h.probe.streamProduced;
        await new Promise((r) => setTimeout(r, 200));
        expect(h.probe.streamProduced - p1).toBe(0);
        expect(h.probe.streamProduced - produced0).toBeLessThan(500); // 16 KiB each: < 8 MiB buffered
      }
      if (received === 5) break;
    }
    await waitFor(() => h.probe.streamClosed > closedBefore, 3000, "handler iterator closed");
    await waitFor(() => rpcLines(h.logs).some((l) => l["method"] === "/berth.v1.WorkspaceService/WatchEvents" && l["code"] === "CANCELLED"));
  });

  it("connect (HTTP/2): streams and cancels", async () => {
    const closedBefore = h.probe.streamClosed;
    let n = 0;
    // connect-es does not reset the HTTP/2 stream on `break`; cancelling is done with a signal.
    const ac = new AbortController();
    const err = await (async () => {
      for await (const r of h.connect("2").watchEvents({}, { signal: ac.signal })) {
        expect(r.event?.kind).toBe("test.tick");
        if (++n === 3) ac.abort();
      }
    })().catch((e: unknown) => e);
    expect((err as ConnectError).code).toBe(Code.Canceled);
    await waitFor(() => h.probe.streamClosed > closedBefore, 3000, "handler iterator closed");
  });

  it("grpc: a stream whose handler ignores the signal still ends on client cancel", async () => {
    const ac = new AbortController();
    const got: string[] = [];
    const err = await (async () => {
      for await (const r of h.grpcClient().attachSession({ sessionId: "att" }, { signal: ac.signal })) {
        got.push(r.message.case ?? "");
        ac.abort();
      }
    })().catch((e: unknown) => e);
    expect(got).toEqual(["workspace"]);
    expect((err as GrpcCallError).codeName).toBe("CANCELLED");
    // (The handler's generator is stuck in an await it never leaves, so its finally cannot run;
    // the call itself is over and logged.)
    await waitFor(() => rpcLines(h.logs).some((l) => l["sessionId"] === "att" && l["code"] === "CANCELLED"));
  });
});

describe("health", () => {
  it("Check on both transports, unknown service → NOT_FOUND", async () => {
    const g = createGrpcClient(Health, h.grpcAddress);
    try {
      expect((await g.check({})).status).toBe(S.SERVING);
      expect((await g.check({ service: "berth.v1.WorkspaceService" })).status).toBe(S.SERVING);
      const e = (await g.check({ service: "nope" }).catch((x: unknown) => x)) as GrpcCallError;
      expect(e.codeName).toBe("NOT_FOUND");
    } finally {
      g.close();
    }
    const c = createClient(Health, createGrpcTransport({ baseUrl: h.httpUrl }));
    expect((await c.check({ service: "" })).status).toBe(S.SERVING);
    const e = (await c.check({ service: "nope" }).catch((x: unknown) => x)) as ConnectError;
    expect(e.code).toBe(Code.NotFound);
  });

  it("Watch streams the current status then each change", async () => {
    const g = createGrpcClient(Health, h.grpcAddress);
    const seen: S[] = [];
    try {
      for await (const r of g.watch({ service: "berth.v1.WorkspaceService" })) {
        seen.push(r.status);
        if (seen.length === 1) h.health.setServing("berth.v1.WorkspaceService", false);
        if (seen.length === 2) h.health.setServing("berth.v1.WorkspaceService", true);
        if (seen.length === 3) break;
      }
    } finally {
      g.close();
    }
    expect(seen).toEqual([S.SERVING, S.NOT_SERVING, S.SERVING]);
  });
});

describe("reflection", () => {
  for (const [name, svc] of [
    ["v1", reflV1.ServerReflection],
    ["v1alpha", reflV1alpha.ServerReflection],
  ] as const) {
    it(`${name}: list_services, file_containing_symbol, file_by_filename, not found`, async () => {
      const g = createGrpcClient(svc as typeof reflV1.ServerReflection, h.grpcAddress);
      try {
        const res = [];
        for await (const r of g.serverReflectionInfo([
          { messageRequest: { case: "listServices", value: "" } },
          { messageRequest: { case: "fileContainingSymbol", value: "berth.v1.WorkspaceService.GetWorkspace" } },
          { messageRequest: { case: "fileContainingSymbol", value: "berth.v1.Workspace" } },
          { messageRequest: { case: "fileByFilename", value: "grpc/health/v1/health.proto" } },
          { messageRequest: { case: "fileContainingSymbol", value: "no.Such" } },
        ])) {
          res.push(r);
        }
        expect(res).toHaveLength(5);
        const list = res[0]!.messageResponse;
        expect(list.case).toBe("listServicesResponse");
        expect(list.case === "listServicesResponse" && list.value.service.map((s) => s.name)).toEqual([
          "berth.v1.WorkspaceService",
          "grpc.health.v1.Health",
          "grpc.reflection.v1.ServerReflection",
          "grpc.reflection.v1alpha.ServerReflection",
        ]);
        const fds = res[1]!.messageResponse;
        expect(fds.case).toBe("fileDescriptorResponse");
        const names = fds.case === "fileDescriptorResponse" ? fds.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b).name) : [];
        expect(names[0]).toBe("berth/v1/workspace_service.proto");
        expect(names).toContain("berth/v1/types.proto");
        expect(names).toContain("google/protobuf/timestamp.proto");
        const types = res[2]!.messageResponse;
        expect(types.case === "fileDescriptorResponse" && fromBinary(FileDescriptorProtoSchema, types.value.fileDescriptorProto[0]!).name).toBe(
          "berth/v1/types.proto",
        );
        expect(res[3]!.messageResponse.case).toBe("fileDescriptorResponse");
        const nf = res[4]!.messageResponse;
        expect(nf.case === "errorResponse" && nf.value.errorCode).toBe(5);
        expect(res[4]!.originalRequest?.messageRequest.value).toBe("no.Such");
      } finally {
        g.close();
      }
    });
  }

  it("reflection is served on the HTTP port (grpc over h2)", async () => {
    const c = createClient(reflV1.ServerReflection, createGrpcTransport({ baseUrl: h.httpUrl }));
    async function* reqs() {
      yield { messageRequest: { case: "listServices" as const, value: "" } };
    }
    const out = [];
    for await (const r of c.serverReflectionInfo(reqs())) out.push(r);
    expect(out[0]?.messageResponse.case).toBe("listServicesResponse");
  });

  it("buf curl works against both ports without a schema", async () => {
    const buf = path.resolve("node_modules/.bin/buf");
    const env = { ...process.env, BUF_CACHE_DIR: path.resolve("node_modules/.cache/buf") };
    const grpcOut = await run(buf, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", "--data", "{}", `http://${h.grpcAddress}/grpc.health.v1.Health/Check`], {
      env,
      timeout: 20_000,
    });
    expect(JSON.parse(grpcOut.stdout)).toEqual({ status: "SERVING" });
    const wsOut = await run(
      buf,
      ["curl", "--protocol", "grpc", "--http2-prior-knowledge", "--data", '{"session_id":"via-buf"}', `http://${h.grpcAddress}/berth.v1.WorkspaceService/GetWorkspace`],
      { env, timeout: 20_000 },
    );
    expect(JSON.parse(wsOut.stdout)).toMatchObject({ workspace: { sessionId: "via-buf", intent: "grpc" } });
    const httpOut = await run(buf, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", "--data", "{}", `${h.httpUrl}/grpc.health.v1.Health/Check`], {
      env,
      timeout: 20_000,
    });
    expect(JSON.parse(httpOut.stdout)).toEqual({ status: "SERVING" });
  });
});
