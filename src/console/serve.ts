/**
 * The web console's route on the HTTP port (issue 17): `GET /` is the page, `GET /console/<file>`
 * its ES modules and stylesheet, read once at start from ./static/ (no build step). Only names
 * found in that folder at start are served, from memory: a request path is looked up, never
 * joined onto the disk, so no `..` or encoded separator reaches the filesystem. Everything else
 * (the Connect, gRPC-Web and gRPC routes, all POST or under /<package>.<Service>/) falls through.
 *
 * The page is static and public; what it shows comes from the RPCs, with the bearer token the user
 * enters (docs/console.md). Its Content-Security-Policy allows scripts, styles and fetches from
 * this origin only and no inline script, so nothing an event or a session carries can run.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const CONSOLE_PREFIX = "/console/";

const TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".png": "image/png",
  ".svg": "image/svg+xml",
};

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

interface Asset {
  readonly body: Buffer;
  readonly type: string;
  readonly etag: string;
}

/** What the route reads of a request, HTTP/1.1's or HTTP/2's compatibility API alike. */
interface Request {
  readonly url?: string | undefined;
  readonly method?: string | undefined;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** What it calls on a response, either flavour. */
interface Response {
  writeHead(status: number, headers: Record<string, string | number>): unknown;
  end(): unknown;
  end(body: Uint8Array | string): unknown;
}

/** Serves a console request and returns true, or returns false for a request that is not the console's. */
export type ConsoleRoute = (req: Request, res: Response) => boolean;

const STATIC_DIR = fileURLToPath(new URL("./static/", import.meta.url));

/** The console's files by URL path, read from `dir` (default ./static/ beside this module). */
export function loadAssets(dir = STATIC_DIR): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const name of readdirSync(dir)) {
    const type = TYPES[path.extname(name)];
    if (type === undefined || !statSync(path.join(dir, name)).isFile()) continue;
    const body = readFileSync(path.join(dir, name));
    assets.set(CONSOLE_PREFIX + name, { body, type, etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"` });
  }
  const index = assets.get(`${CONSOLE_PREFIX}index.html`);
  if (index) assets.set("/", index);
  return assets;
}

function send(res: Response, status: number, headers: Record<string, string | number>, body?: Buffer | string): void {
  res.writeHead(status, {
    "content-security-policy": CONSOLE_CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    ...headers,
  });
  if (body === undefined) res.end();
  else res.end(body);
}

export function consoleRoute(assets: ReadonlyMap<string, Asset> = loadAssets()): ConsoleRoute {
  return (req, res) => {
    const rawPath = (req.url ?? "/").split("?")[0]!;
    if (rawPath !== "/" && !rawPath.startsWith(CONSOLE_PREFIX)) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      // "/" takes no POST: Connect's routes are /<service>/<method>, so none is shadowed here.
      send(res, 405, { allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" }, "method not allowed\n");
      return true;
    }
    const asset = assets.get(rawPath);
    if (!asset) {
      send(res, 404, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" }, "not found\n");
      return true;
    }
    // Revalidated on every load (a new server version serves new files at the same names), cheap with the ETag.
    const common = { "cache-control": "no-cache", etag: asset.etag };
    if (req.headers["if-none-match"] === asset.etag) {
      send(res, 304, common);
      return true;
    }
    send(res, 200, { ...common, "content-type": asset.type, "content-length": asset.body.length }, req.method === "HEAD" ? undefined : asset.body);
    return true;
  };
}
