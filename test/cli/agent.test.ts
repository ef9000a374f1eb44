/**
 * The agent side of the berth command, run as the real binary against a real server and a real
 * git repository: workspace create/show/destroy, file ls/cat/write/rm (stdin and local files,
 * raw bytes), claim/release/who-touched, turn begin/end/cancel, heartbeat and attach holding an
 * ephemeral session past its lease, errors as JSON, BERTH_HTTP_ADDR, the gRPC-port hint,
 * --version and shell completion.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LifecycleState } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { BIN, ROOT, Watcher, berth, berthJson, cliEnv, gitFixture, type Result } from "./helpers.js";

/** Short enough that a test outlives several leases, long enough for a loaded machine. */
const LEASE_MS = 1_500;

let server: TestBerth;
let url: string;
const run = (...args: string[]) => berth([...args, "--server", url]);
const json = <T = Record<string, unknown>>(...args: string[]) => berthJson<T>([...args, "--server", url]);

beforeAll(async () => {
  server = await startBerth({
    env: { BERTH_ENV_ROOT: mkdtempSync(path.join(tmpdir(), "berth-cli-envs-")), BERTH_SESSION_LEASE_MS: String(LEASE_MS), BERTH_GC_INTERVAL_MS: "200" },
  });
  url = server.server.httpUrl;
});
afterAll(async () => {
  await server?.close();
});

interface Ws {
  workspace: { sessionId: string; changesetId: string; agentName: string; repoId: string; lifecycleState: string };
}

let repoCount = 0;
async function newRepo(): Promise<string> {
  const name = `agent-${process.pid}-${++repoCount}`;
  const r = await run("repos", "add", name, "--source", gitFixture());
  expect(r.code, r.stderr).toBe(0);
  return name;
}

/** `berth …` with stdin from `input`. */
function withStdin(args: readonly string[], input: Buffer): Promise<Result> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args, "--server", url], { cwd: ROOT, env: cliEnv() });
    const out: Buffer[] = [];
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => out.push(d));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("close", (code) => resolve({ code: code ?? -1, stdout: Buffer.concat(out).toString("latin1"), stderr }));
    child.stdin.end(input);
  });
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Heartbeats from the test until stop(): keeps a fresh ephemeral session connected while the
 * berth process under test starts (slower than a lease on a loaded machine).
 */
function bridge(sessionId: string): () => void {
  const timer = setInterval(() => void server.grpc.heartbeat({ sessionId }).catch(() => undefined), LEASE_MS / 5);
  return () => clearInterval(timer);
}

/** Through ListSessions: a call naming the session (GetWorkspace) would itself keep it connected. */
async function lifecycle(repoId: string, sessionId: string): Promise<LifecycleState | undefined> {
  const { sessions } = await server.grpc.listSessions({ repoId });
  return sessions.find((s) => s.sessionId === sessionId)?.lifecycleState;
}

describe("berth workspace and berth file", { timeout: 120_000 }, () => {
  it("creates a workspace, writes from stdin and from a local file byte for byte, lists, reads, deletes and destroys", async () => {
    const repo = await newRepo();
    const { workspace: ws } = await json<Ws>("workspace", "create", "--repo", repo, "--mode", "persistent", "--agent", "claude-7", "--intent", "say hello");
    expect(ws).toMatchObject({ agentName: "agent-1", lifecycleState: "LIFECYCLE_STATE_ACTIVE" });

    // Every byte value, a NUL and an invalid UTF-8 sequence: no base64 and no text decoding on the way.
    const binary = Buffer.from([...Array(256).keys()]);
    const piped = await withStdin(["file", "write", ws.sessionId, "data.bin"], binary);
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout).toMatch(/^change\s+added$/m);
    expect(piped.stdout).toMatch(/^bytes\s+256$/m);
    const cat = await withStdin(["file", "cat", ws.sessionId, "data.bin"], Buffer.alloc(0));
    expect(Buffer.from(cat.stdout, "latin1").equals(binary)).toBe(true);
    // Larger than a pipe's buffer: the CLI exits only once stdout has taken all of it.
    const large = Buffer.alloc(300 * 1024, "0123456789abcdef");
    expect((await withStdin(["file", "write", ws.sessionId, "large.txt"], large)).code).toBe(0);
    const catLarge = await withStdin(["file", "cat", ws.sessionId, "large.txt"], Buffer.alloc(0));
    expect(catLarge.code, catLarge.stderr).toBe(0);
    expect(Buffer.from(catLarge.stdout, "latin1").length).toBe(large.length);

    const local = path.join(mkdtempSync(path.join(tmpdir(), "berth-cli-file-")), "hello.ts");
    writeFileSync(local, "export function hello() { return 1; }\n");
    const written = await run("file", "write", ws.sessionId, "src/hello.ts", local, "--new");
    expect(written.code, written.stderr).toBe(0);
    expect(written.stdout).toMatch(/^symbols\s+hello$/m);
    // --new refuses a second write of an existing file (expected_hash "").
    const again = await run("file", "write", ws.sessionId, "src/hello.ts", local, "--new");
    expect(again.code).toBe(1);

    const removed = await run("file", "rm", ws.sessionId, "README.md");
    expect(removed.code, removed.stderr).toBe(0);
    const ls = await run("file", "ls", ws.sessionId);
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout).toMatch(/^README\.md\s+deleted/m);
    expect(ls.stdout).toMatch(/^index\.ts\s+base/m);
    expect(ls.stdout).toMatch(/^src\/hello\.ts\s+added/m);
    const lsJson = await json<{ entries: { path: string }[] }>("file", "ls", ws.sessionId, "--prefix", "src/");
    expect(lsJson.entries.map((e) => e.path)).toEqual(["src/hello.ts"]);

    const shown = await run("workspace", "show", ws.sessionId);
    expect(shown.stdout).toMatch(/^lifecycle\s+ACTIVE$/m);
    const destroyed = await run("workspace", "destroy", ws.sessionId);
    expect(destroyed.code, destroyed.stderr).toBe(0);
    expect(destroyed.stdout).toMatch(/^lifecycle\s+DESTROYED$/m);
  });

  it("refuses a file write with nothing on stdin but a terminal, and an unreadable local file, as usage errors", async () => {
    const repo = await newRepo();
    const { workspace: ws } = await json<Ws>("workspace", "create", "--repo", repo, "--mode", "persistent", "--agent", "claude-7");
    const missing = await run("file", "write", ws.sessionId, "x.txt", "/nonexistent/berth-file");
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read \/nonexistent\/berth-file/);
  });
});

describe("berth claim, release and who-touched", { timeout: 120_000 }, () => {
  it("claims a file, shows the holder to another agent, refuses that agent with SYMBOL_LOCKED, and releases", async () => {
    const repo = await newRepo();
    const { workspace: a } = await json<Ws>("workspace", "create", "--repo", repo, "--mode", "persistent", "--agent", "agent-a");
    const { workspace: b } = await json<Ws>("workspace", "create", "--repo", repo, "--mode", "persistent", "--agent", "agent-b");
    const claimed = await run("claim", a.sessionId, "index.ts");
    expect(claimed.code, claimed.stderr).toBe(0);
    expect(claimed.stdout).toMatch(/^index\.ts\s+\(file\)\s+agent-1/m);

    const refused = await run("claim", b.sessionId, "index.ts", "--json");
    expect(refused.code).toBe(1);
    const error = JSON.parse(refused.stderr) as { code: string; reason: string; message: string; details: Record<string, unknown> };
    expect(error).toMatchObject({ code: "FAILED_PRECONDITION", reason: "SYMBOL_LOCKED" });
    expect(error.message).not.toBe("");
    // --json keeps every metadata key, empty ones too (a script reads fixed keys).
    expect(error.details).toMatchObject({ path: "index.ts", symbol: "", holder_agent_name: "agent-1", locked_symbols: "" });

    // For people: the reason and the fields that have values, none printed empty.
    const told = await run("claim", b.sessionId, "index.ts");
    expect(told.code).toBe(1);
    const lines = told.stderr.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^berth: FAILED_PRECONDITION SYMBOL_LOCKED: index\.ts \(the file as a whole\) is claimed by agent-1 /);
    expect(lines.slice(1)).toEqual(expect.arrayContaining(["  holder_agent_name: agent-1", "  holder_agent_id: agent-a", "  path: index.ts", `  holder_session_id: ${a.sessionId}`]));
    expect(lines.filter((l) => /^ {2}\w+:\s*$/.test(l))).toEqual([]);
    expect(told.stderr).not.toMatch(/^ {2}(symbol|locked_symbols):/m);

    await withStdin(["file", "write", a.sessionId, "index.ts"], Buffer.from("export const answer = 43;\n"));
    const who = await run("who-touched", "index.ts", "--repo", repo, "--session", b.sessionId);
    expect(who.code, who.stderr).toBe(0);
    expect(who.stdout).toMatch(/agent-1/);
    const nobody = await run("who-touched", "README.md", "--repo", repo);
    expect(nobody.stdout).toMatch(/nobody else touched README\.md/);

    const released = await run("release", a.sessionId);
    expect(released.stdout).toMatch(/released \d+ claim\(s\)/);
    expect((await run("claim", b.sessionId, "README.md")).code).toBe(0);
  });
});

describe("berth turn", { timeout: 120_000 }, () => {
  it("begins a turn, ends it with an outcome, and cancels a second one", async () => {
    const repo = await newRepo();
    const { workspace: ws } = await json<Ws>("workspace", "create", "--repo", repo, "--mode", "persistent", "--agent", "claude-7");
    const watch = new Watcher(["turn", "watch", "--session", ws.sessionId, "--json", "--server", url]);
    try {
      const begun = await json<{ turnId: string; environmentPath: string }>("turn", "begin", ws.sessionId, "--id", "t-1");
      expect(begun.environmentPath).not.toBe("");
      // A retried begin with the same id is the same turn.
      expect((await json<{ turnId: string }>("turn", "begin", ws.sessionId, "--id", "t-1")).turnId).toBe(begun.turnId);
      writeFileSync(path.join(begun.environmentPath, "made-in-turn.txt"), "hi\n");
      const ended = await run("turn", "end", begun.turnId, "--outcome", "completed");
      expect(ended.code, ended.stderr).toBe(0);
      expect(ended.stdout).toMatch(/^captured\s+made-in-turn\.txt$/m);

      const second = await json<{ turnId: string }>("turn", "begin", ws.sessionId);
      const cancelled = await run("turn", "cancel", second.turnId);
      expect(cancelled.stdout).toMatch(/^cancelled\s+yes$/m);
      await watch.waitForLines(2);
      expect(watch.lines.map((l) => (JSON.parse(l) as { kind: string }).kind)).toContain("turn.started");
    } finally {
      watch.kill();
    }
    const bad = await run("turn", "end", "00000000-0000-4000-8000-000000000000", "--outcome", "sideways");
    expect(bad.code).toBe(2);
  });
});

describe("berth heartbeat and berth attach", { timeout: 120_000 }, () => {
  it("attach holds an ephemeral session past its lease; once it stops, the session is stranded", async () => {
    const repo = await newRepo();
    const { workspace: ws } = await json<Ws>("workspace", "create", "--repo", repo, "--agent", "claude-7");
    const stopBridge = bridge(ws.sessionId);
    const attach = new Watcher(["attach", ws.sessionId, "--server", url]);
    try {
      await attach.waitForLines(1);
      stopBridge();
      expect(attach.lines[0]).toMatch(new RegExp(`attached to session ${ws.sessionId}`));
      // Three leases with no call but the open stream.
      await new Promise((r) => setTimeout(r, 3 * LEASE_MS));
      expect(await lifecycle(ws.repoId, ws.sessionId)).toBe(LifecycleState.ACTIVE);
    } finally {
      stopBridge();
      attach.kill();
    }
    expect(await attach.exited).toBe(0);
    await until("the released session is stranded", async () => (await lifecycle(ws.repoId, ws.sessionId)) === LifecycleState.STRANDED);
  });

  it("heartbeat holds an ephemeral session past its lease, and --once sends one", async () => {
    const repo = await newRepo();
    const { workspace: ws } = await json<Ws>("workspace", "create", "--repo", repo, "--agent", "claude-7");
    const stopBridge = bridge(ws.sessionId);
    expect(await json<{ leaseMs: number }>("heartbeat", ws.sessionId, "--once")).toEqual({ leaseMs: LEASE_MS });
    const hb = new Watcher(["heartbeat", ws.sessionId, "--server", url]);
    try {
      await hb.waitForLines(1);
      stopBridge();
      expect(hb.lines[0]).toMatch(/holding session .* \(lease 1500 ms\) until Ctrl-C/);
      await new Promise((r) => setTimeout(r, 3 * LEASE_MS));
      expect(await lifecycle(ws.repoId, ws.sessionId)).toBe(LifecycleState.ACTIVE);
    } finally {
      stopBridge();
      hb.kill();
    }
    expect(await hb.exited).toBe(0);
  });

  it("attach exits 1 when the session is stranded under it", async () => {
    const repo = await newRepo();
    const { workspace: ws } = await json<Ws>("workspace", "create", "--repo", repo, "--mode", "persistent", "--agent", "claude-7");
    const attach = new Watcher(["attach", ws.sessionId, "--server", url]);
    await attach.waitForLines(1);
    expect((await run("sessions", "strand", ws.sessionId)).code).toBe(0);
    expect(await attach.exited).toBe(1);
    expect(attach.stderr).toMatch(/no longer active/);
  });
});

describe("berth events watch", { timeout: 120_000 }, () => {
  it("tails from now by default, and --history prints the retained events and exits", async () => {
    const repo = await newRepo();
    const before = await json<Ws>("workspace", "create", "--repo", repo, "--mode", "persistent", "--agent", "before");
    const watch = new Watcher(["events", "watch", "--repo", repo, "--json", "--server", url]);
    try {
      await watch.waitForStderr(/from now/);
      const after = await json<Ws>("workspace", "create", "--repo", repo, "--mode", "persistent", "--agent", "after");
      const [line] = await watch.waitForLines(1);
      expect(JSON.parse(line!)).toMatchObject({ kind: "session.created", sessionId: after.workspace.sessionId });
    } finally {
      watch.kill();
    }
    const history = await run("events", "watch", "--repo", repo, "--history", "--json");
    expect(history.code, history.stderr).toBe(0);
    const kinds = history.stdout.trim().split("\n").map((l) => JSON.parse(l) as { kind: string; sessionId: string });
    expect(kinds.filter((e) => e.kind === "session.created").map((e) => e.sessionId)).toEqual([before.workspace.sessionId, expect.any(String)]);
  });
});

describe("finding the server, errors and the command itself", { timeout: 120_000 }, () => {
  it("reads the HTTP address from BERTH_HTTP_ADDR, as the server does", async () => {
    const port = new URL(url).port;
    const r = await berth(["repos", "ls"], { BERTH_HTTP_ADDR: `0.0.0.0:${port}` });
    expect(r.code, r.stderr).toBe(0);
  });

  it("says it is the gRPC port when pointed at it, and exits 3", async () => {
    const r = await berth(["repos", "ls", "--server", `http://${server.server.grpcAddress}`]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/looks like the gRPC port \(BERTH_ADDR\).*HTTP port \(BERTH_HTTP_ADDR/);
  });

  it("reports every failure as one JSON line on stderr with --json: server refusals, usage errors, an unreachable server", async () => {
    const refused = await run("workspace", "show", "00000000-0000-4000-8000-000000000000", "--json");
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(JSON.parse(refused.stderr)).toMatchObject({ code: "NOT_FOUND", reason: "SESSION_NOT_FOUND", details: { session_id: "00000000-0000-4000-8000-000000000000" } });

    const invalid = await run("workspace", "show", "not-a-uuid", "--json");
    const bad = JSON.parse(invalid.stderr) as { code: string; details: { fieldViolations: { field: string }[] } };
    expect(bad.code).toBe("INVALID_ARGUMENT");
    expect(bad.details.fieldViolations[0]!.field).toBe("session_id");

    const usage = await run("workspace", "create", "--json");
    expect(usage.code).toBe(2);
    expect(JSON.parse(usage.stderr)).toMatchObject({ code: "INVALID_ARGUMENT", reason: "USAGE" });

    const down = await berth(["repos", "ls", "--json", "--server", "http://127.0.0.1:1"]);
    expect(down.code).toBe(3);
    expect(JSON.parse(down.stderr)).toMatchObject({ code: "UNAVAILABLE", reason: "UNREACHABLE", details: { cause: "ECONNREFUSED" } });
  });

  it("prints the package version", async () => {
    const r = await berth(["--version"]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe((JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string }).version);
  });

  it("prints bash and zsh completion scripts that bash parses and that complete subcommands and options", async () => {
    const bash = await berth(["completion", "bash"]);
    expect(bash.code).toBe(0);
    expect(bash.stdout).toMatch(/complete -F _berth berth/);
    const zsh = await berth(["completion", "zsh"]);
    expect(zsh.stdout).toMatch(/^#compdef berth/);
    expect(zsh.stdout).toMatch(/bashcompinit/);
    // Ask the generated function itself, in a real bash.
    const script = path.join(mkdtempSync(path.join(tmpdir(), "berth-completion-")), "berth.bash");
    writeFileSync(script, bash.stdout);
    const complete = (line: string) =>
      new Promise<string>((resolve, reject) => {
        const words = line.split(" ");
        const prog = `source ${script}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _berth; printf '%s\\n' "\${COMPREPLY[@]}"`;
        const child = spawn("bash", ["-c", prog]);
        let out = "";
        child.stdout.on("data", (d: Buffer) => (out += d.toString()));
        child.on("error", reject);
        child.on("close", () => resolve(out));
      });
    expect((await complete("berth wo")).trim()).toBe("workspace");
    expect((await complete("berth workspace ")).split("\n")).toEqual(expect.arrayContaining(["create", "show", "destroy"]));
    expect((await complete("berth file write --")).split("\n")).toEqual(expect.arrayContaining(["--expect-hash", "--new", "--server", "--json"]));
    expect((await complete("berth --server http://x turn ")).split("\n")).toEqual(expect.arrayContaining(["begin", "end", "cancel", "watch", "ls"]));
  });
});
