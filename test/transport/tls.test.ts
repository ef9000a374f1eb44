import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { startHarness, type Harness } from "./harness.js";

const dir = mkdtempSync(path.join(tmpdir(), "berth-tls-"));
const f = (n: string) => path.join(dir, n);
function openssl(...args: string[]): void {
  execFileSync("openssl", args, { stdio: "pipe" });
}

beforeAll(() => {
  // A CA, a server cert for 127.0.0.1/localhost, and a client cert, all signed by the CA.
  openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f("ca.key"), "-out", f("ca.pem"), "-days", "1", "-subj", "/CN=berth-test-ca");
  writeFileSync(f("server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f("server.key"), "-out", f("server.csr"), "-subj", "/CN=localhost");
  openssl("x509", "-req", "-in", f("server.csr"), "-CA", f("ca.pem"), "-CAkey", f("ca.key"), "-CAcreateserial", "-out", f("server.pem"), "-days", "1", "-extfile", f("server.ext"));
  writeFileSync(f("client.ext"), "extendedKeyUsage=clientAuth\n");
  openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f("client.key"), "-out", f("client.csr"), "-subj", "/CN=agent-a");
  openssl("x509", "-req", "-in", f("client.csr"), "-CA", f("ca.pem"), "-CAkey", f("ca.key"), "-CAcreateserial", "-out", f("client.pem"), "-days", "1", "-extfile", f("client.ext"));
});

describe("TLS", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ tls: { cert: f("server.pem"), key: f("server.key"), clientCa: undefined } });
  });
  afterAll(async () => {
    await h.close();
  });

  it("grpc-js over TLS", async () => {
    const c = createGrpcClient(WorkspaceService, h.grpcAddress, { credentials: grpc.credentials.createSsl(readFileSync(f("ca.pem"))) });
    try {
      expect((await c.getWorkspace({ sessionId: "t" })).workspace?.sessionId).toBe("t");
    } finally {
      c.close();
    }
  });

  it.each(["1.1", "2"] as const)("connect and grpc-web over https (HTTP/%s)", async (httpVersion) => {
    const nodeOptions = { ca: readFileSync(f("ca.pem")) };
    const c = createClient(WorkspaceService, createConnectTransport({ baseUrl: h.httpUrl, httpVersion, nodeOptions }));
    expect((await c.getWorkspace({ sessionId: "c" })).workspace?.intent).toBe("connect");
    const w = createClient(WorkspaceService, createGrpcWebTransport({ baseUrl: h.httpUrl, httpVersion, nodeOptions }));
    expect((await w.getWorkspace({ sessionId: "w" })).workspace?.intent).toBe("grpc-web");
  });

  it("a plaintext client is refused", async () => {
    const c = createGrpcClient(WorkspaceService, h.grpcAddress);
    try {
      const e = (await c.getWorkspace({ sessionId: "x" }, { deadlineMs: 2000 }).catch((x: unknown) => x)) as { code: number };
      expect(e.code).toBeOneOf([grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED]);
    } finally {
      c.close();
    }
  });
});

describe("mutual TLS", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ tls: { cert: f("server.pem"), key: f("server.key"), clientCa: f("ca.pem") } });
  });
  afterAll(async () => {
    await h.close();
  });

  it("grpc-js: a client certificate is required", async () => {
    const ca = readFileSync(f("ca.pem"));
    const without = createGrpcClient(WorkspaceService, h.grpcAddress, { credentials: grpc.credentials.createSsl(ca) });
    const withCert = createGrpcClient(WorkspaceService, h.grpcAddress, {
      credentials: grpc.credentials.createSsl(ca, readFileSync(f("client.key")), readFileSync(f("client.pem"))),
    });
    try {
      const e = (await without.getWorkspace({ sessionId: "x" }, { deadlineMs: 3000 }).catch((x: unknown) => x)) as { code: number };
      expect(e.code).toBeOneOf([grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED]);
      expect((await withCert.getWorkspace({ sessionId: "m" })).workspace?.sessionId).toBe("m");
    } finally {
      without.close();
      withCert.close();
    }
  });

  it.each(["1.1", "2"] as const)("connect (HTTP/%s): a client certificate is required", async (httpVersion) => {
    const ca = readFileSync(f("ca.pem"));
    const bare = createClient(WorkspaceService, createConnectTransport({ baseUrl: h.httpUrl, httpVersion, nodeOptions: { ca } }));
    await expect(bare.getWorkspace({ sessionId: "x" }, { timeoutMs: 3000 })).rejects.toThrow();
    const c = createClient(
      WorkspaceService,
      createConnectTransport({ baseUrl: h.httpUrl, httpVersion, nodeOptions: { ca, cert: readFileSync(f("client.pem")), key: readFileSync(f("client.key")) } }),
    );
    expect((await c.getWorkspace({ sessionId: "m" })).workspace?.sessionId).toBe("m");
  });
});
