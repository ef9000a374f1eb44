import { describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { GrpcCallError } from "../support/grpc-client.js";
import { rpcLines, startHarness, waitFor } from "./harness.js";

describe("graceful shutdown", () => {
  it("an in-flight unary call completes; open streams end with UNAVAILABLE; new connections are refused", async () => {
    const h = await startHarness();
    const g = h.grpcClient();
    const c = h.connect("2");

    // A unary call that needs 300 ms (well within the 1.5 s grace) on each transport.
    const unaryGrpc = g.getWorkspace({ sessionId: "slow:300" });
    const unaryConnect = c.getWorkspace({ sessionId: "slow:300" });
    // Streams that never end by themselves (one ignores its signal).
    const streamOutcome = (async () => {
      try {
        for await (const _ of g.attachSession({ sessionId: "att-g" })) void _;
        return "ended OK";
      } catch (e) {
        return e;
      }
    })();
    const connectStreamOutcome = (async () => {
      try {
        for await (const _ of c.attachSession({ sessionId: "att-c" })) void _;
        return "ended OK";
      } catch (e) {
        return e;
      }
    })();
    await waitFor(() => h.probe.slowStarted === 2 && h.probe.streamsOpen === 2, 5000, "calls in flight");

    const started = Date.now();
    const shutdown = h.transports.shutdown(1500);

    const [ug, uc] = await Promise.all([unaryGrpc, unaryConnect]);
    expect(ug.workspace?.sessionId).toBe("slow:300");
    expect(uc.workspace?.sessionId).toBe("slow:300");

    const sg = (await streamOutcome) as GrpcCallError;
    expect(sg).toBeInstanceOf(GrpcCallError);
    expect(sg.codeName).toBe("UNAVAILABLE");
    expect(sg.details).toBe("server shutting down");
    expect(sg.errorInfo?.reason).toBe("SERVER_SHUTTING_DOWN");
    const sc = (await connectStreamOutcome) as ConnectError;
    expect(sc).toBeInstanceOf(ConnectError);
    expect(sc.code).toBe(Code.Unavailable);

    await shutdown;
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(1400);
    expect(took).toBeLessThan(5000);
    const lines = rpcLines(h.logs);
    expect(lines.filter((l) => l["sessionId"] === "slow:300").map((l) => l["code"])).toEqual(["OK", "OK"]);
    expect(lines.filter((l) => String(l["sessionId"]).startsWith("att-")).map((l) => l["code"])).toEqual(["UNAVAILABLE", "UNAVAILABLE"]);

    // The ports are closed.
    const after = await g.getWorkspace({ sessionId: "late" }, { deadlineMs: 1000 }).catch((e: unknown) => e);
    expect(after).toBeInstanceOf(GrpcCallError);
    await h.close();
  });

  it("shutdown with nothing in flight is quick", async () => {
    const h = await startHarness();
    await h.grpcClient().getWorkspace({ sessionId: "x" });
    const t = Date.now();
    await h.close(5000);
    expect(Date.now() - t).toBeLessThan(2000);
  });
});
