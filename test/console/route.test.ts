/**
 * The console's route on the HTTP port (issue 17), through a real server: the page and its
 * modules with their types, security headers and cache validators; nothing outside the console's
 * files (no traversal); the Connect routes untouched beside it, on HTTP/1.1 and h2.
 */
import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBerth, type TestBerth } from "../support/berth.js";

let berth: TestBerth;
beforeAll(async () => {
  berth = await startBerth();
});
afterAll(async () => {
  await berth?.close();
});

const get = (p: string, init?: RequestInit) => fetch(`${berth.server.httpUrl}${p}`, init);

describe("the console route", () => {
  it("serves the page at / and its modules under /console/ with their types, a CSP without inline script, and revalidation", async () => {
    const page = await get("/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const csp = page.headers.get("content-security-policy")!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain("unsafe-inline");
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    expect(page.headers.get("cache-control")).toBe("no-cache");
    const html = await page.text();
    expect(html).toContain('<script type="module" src="/console/app.js"></script>');
    // No inline script anywhere: every <script> has a src.
    expect(html.match(/<script(?![^>]*\ssrc=)[^>]*>/g)).toBeNull();

    const js = await get("/console/app.js");
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect((await get("/console/console.css")).headers.get("content-type")).toBe("text/css; charset=utf-8");
    const etag = js.headers.get("etag")!;
    expect(etag).toMatch(/^"[\w-]+"$/);
    const again = await get("/console/app.js", { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
    const head = await get("/console/app.js", { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get("content-length"))).toBeGreaterThan(100);
  });

  it("serves nothing but the console's own files: traversal, encoded separators, other files and methods are refused", async () => {
    // fetch would normalise "..": a raw request line keeps it.
    const raw = async (p: string) => {
      const { request } = await import("node:http");
      const u = new URL(berth.server.httpUrl);
      return new Promise<number>((resolve, reject) => {
        const req = request({ host: u.hostname, port: u.port, path: p, method: "GET" }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on("error", reject);
        req.end();
      });
    };
    for (const p of ["/console/../package.json", "/console/..%2f..%2fpackage.json", "/console/%2e%2e/serve.ts", "/console/serve.ts", "/console/tsconfig.json", "/console/", "/console/nope.js"]) {
      expect([p, await raw(p)]).toEqual([p, 404]);
    }
    expect((await get("/", { method: "POST", body: "{}" })).status).toBe(405);
  });

  it("leaves the Connect routes as they were, on HTTP/1.1 and on h2", async () => {
    const res = await get("/berth.v1.WorkspaceService/ListRepositories", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({});
    const session = http2.connect(berth.server.httpUrl);
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const s = session.request({ ":path": "/", ":method": "GET" });
        s.on("response", (h) => resolve(Number(h[":status"])));
        s.on("error", reject);
        s.resume();
        s.end();
      });
      expect(status).toBe(200);
    } finally {
      session.close();
    }
    expect((await berth.connect.listRepositories({})).repositories).toEqual([]);
  });
});
