/**
 * Git servers for the tests of repositories on a git server (issue 28): bare repositories under
 * a directory, served by a real `git daemon` (git://, push enabled) on an ephemeral port of
 * 127.0.0.1, or by `git http-backend` behind a small HTTP server that wants a bearer token; and
 * someone else's clone that pushes to them.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { connect, createServer as createTcpServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { BASE_FILES } from "../landing/helpers.js";

/** git as a test runs it: no global or system config, an identity. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=t", ...args], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1", GIT_TERMINAL_PROMPT: "0" },
  }).trim();
}

export interface Remote {
  /** The directory the servers export (--base-path). */
  readonly base: string;
  /** The bare repository. */
  readonly dir: string;
  readonly name: string;
  /** file:// URL of the bare repository. */
  readonly fileUrl: string;
  /** The first commit (BASE_FILES), on main. */
  readonly base0: string;
  /** git in the bare repository. */
  git(...args: string[]): string;
  /** Commits `files` on `branch` in a clone of its own and pushes it straight into the bare repository (someone else's push). */
  push(branch: string, files: Record<string, string>, message: string): string;
  /** The tree of a commit: path → content. */
  files(commit: string): Map<string, string>;
}

/** A bare repository `<name>.git` under a fresh base directory, main holding BASE_FILES (run.sh executable). */
export function bareRemote(name = "demo", base = mkdtempSync(path.join(process.env.BERTH_TEST_TMP ?? tmpdir(), "berth-remote-"))): Remote {
  const dir = path.join(base, `${name}.git`);
  git(base, "init", "-q", "--bare", "-b", "main", dir);
  git(dir, "config", "daemon.receivepack", "true");
  git(dir, "config", "http.receivepack", "true");
  const work = mkdtempSync(path.join(process.env.BERTH_TEST_TMP ?? tmpdir(), "berth-remote-work-"));
  git(work, "init", "-q", "-b", "main");
  for (const [p, content] of Object.entries(BASE_FILES)) {
    mkdirSync(path.dirname(path.join(work, p)), { recursive: true });
    writeFileSync(path.join(work, p), content);
  }
  chmodSync(path.join(work, "run.sh"), 0o755);
  git(work, "add", "-A");
  git(work, "commit", "-q", "-m", "base");
  git(work, "push", "-q", dir, "main");
  const base0 = git(work, "rev-parse", "HEAD");
  const remote: Remote = {
    base,
    dir,
    name,
    fileUrl: `file://${dir}`,
    base0,
    git: (...args) => git(dir, ...args),
    push(branch, files, message) {
      // A branch the server does not have yet starts from its main.
      const exists = git(dir, "for-each-ref", `refs/heads/${branch}`) !== "";
      git(work, "fetch", "-q", dir, `+refs/heads/${exists ? branch : "main"}:refs/remotes/r/${branch}`);
      git(work, "checkout", "-q", "-B", branch, `refs/remotes/r/${branch}`);
      for (const [p, content] of Object.entries(files)) {
        mkdirSync(path.dirname(path.join(work, p)), { recursive: true });
        writeFileSync(path.join(work, p), content);
      }
      git(work, "add", "-A");
      git(work, "commit", "-q", "-m", message);
      git(work, "push", "-q", dir, `HEAD:refs/heads/${branch}`);
      return git(work, "rev-parse", "HEAD");
    },
    files(commit) {
      const out = new Map<string, string>();
      for (const p of git(dir, "ls-tree", "-r", "--name-only", "--full-tree", commit).split("\n")) {
        if (p) out.set(p, execFileSync("git", ["-C", dir, "show", `${commit}:${p}`], { encoding: "utf8", env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null" } }));
      }
      return out;
    },
  };
  return remote;
}

/** A free TCP port of 127.0.0.1 now (the caller binds it next, and retries on a clash). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createTcpServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts connections on the port, rejects if `exited` says the process ended first. */
async function listening(port: number, exited: () => boolean): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (exited()) throw new Error("exited before listening");
    const ok = await new Promise<boolean>((resolve) => {
      const c = connect(port, "127.0.0.1");
      c.once("connect", () => {
        c.destroy();
        resolve(true);
      });
      c.once("error", () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`nothing listens on 127.0.0.1:${port}`);
}

export interface GitDaemon {
  readonly port: number;
  /** git://127.0.0.1:<port>/<name>.git */
  url(name: string): string;
  /** Stops the daemon (its port closes; connections are refused). */
  stop(): Promise<void>;
  /** Starts it again on the same port (nothing when it runs). */
  start(): Promise<void>;
}

/**
 * `git daemon --export-all --enable=receive-pack --base-path=<base>` on 127.0.0.1 at a free port
 * (another process may take the port between the probe and the bind: tried again on a new one).
 */
export async function startGitDaemon(base: string): Promise<GitDaemon> {
  let child: ChildProcess | undefined;
  let port = 0;
  const run = async (p: number) => {
    const c = spawn("git", ["daemon", "--reuseaddr", "--export-all", "--enable=receive-pack", `--base-path=${base}`, "--listen=127.0.0.1", `--port=${p}`, base], {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" },
    });
    c.stderr?.resume();
    let exited = false;
    c.once("exit", () => (exited = true));
    await listening(p, () => exited);
    child = c;
  };
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    try {
      await run(port);
      break;
    } catch (err) {
      if (attempt >= 4) throw err;
    }
  }
  const stop = async () => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once("exit", () => resolve());
      c.kill("SIGTERM");
    });
  };
  return {
    port,
    url: (name) => `git://127.0.0.1:${port}/${name}.git`,
    stop,
    start: async () => {
      if (child && child.exitCode === null) return;
      await run(port);
    },
  };
}

export interface HttpGit {
  /** http://127.0.0.1:<port>/<name>.git */
  url(name: string): string;
  /** The Authorization headers requests came with, in order. */
  readonly seen: string[];
  stop(): Promise<void>;
}

/**
 * Smart HTTP through `git http-backend` (CGI), answering 401 to a request without
 * `Authorization: Bearer <token>`: a git server that wants credentials, which Berth gets from
 * BERTH_GIT_HTTP_HEADER_FILE only.
 */
export async function startHttpGit(base: string, token: string): Promise<HttpGit> {
  const seen: string[] = [];
  const server: Server = createServer((req, res) => {
    const auth = req.headers.authorization ?? "";
    seen.push(auth);
    if (auth !== `Bearer ${token}`) {
      res.writeHead(401, { "www-authenticate": 'Bearer realm="git"' });
      res.end("unauthorized\n");
      return;
    }
    const url = new URL(req.url ?? "/", "http://x");
    const cgi = spawn("git", ["http-backend"], {
      env: {
        ...process.env,
        GIT_CONFIG_GLOBAL: "/dev/null",
        GIT_CONFIG_NOSYSTEM: "1",
        GIT_PROJECT_ROOT: base,
        GIT_HTTP_EXPORT_ALL: "1",
        REMOTE_USER: "berth",
        REQUEST_METHOD: req.method ?? "GET",
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: req.headers["content-type"] ?? "",
        ...(req.headers["content-encoding"] ? { HTTP_CONTENT_ENCODING: String(req.headers["content-encoding"]) } : {}),
        ...(req.headers["git-protocol"] ? { GIT_PROTOCOL: String(req.headers["git-protocol"]) } : {}),
      },
      stdio: ["pipe", "pipe", "ignore"],
    });
    req.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let headersDone = false;
    cgi.stdout.on("data", (chunk: Buffer) => {
      if (headersDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      headersDone = true;
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of head.subarray(0, end).toString("latin1").split("\r\n")) {
        const i = line.indexOf(":");
        const k = line.slice(0, i).trim();
        const v = line.slice(i + 1).trim();
        if (k.toLowerCase() === "status") status = Number(v.split(" ")[0]);
        else headers[k] = v;
      }
      res.writeHead(status, headers);
      res.write(head.subarray(end + 4));
    });
    cgi.stdout.on("end", () => res.end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: (name) => `http://127.0.0.1:${port}/${name}.git`,
    seen,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A clone of `url` (as anyone would take one) in a fresh directory; returns the directory. */
export function cloneOf(url: string): string {
  const dir = mkdtempSync(path.join(process.env.BERTH_TEST_TMP ?? tmpdir(), "berth-clone-"));
  git(dir, "clone", "-q", url, "c");
  return path.join(dir, "c");
}
