/**
 * `berth run` around scripted agents (real processes: sh and git), as the real binary against a
 * real server: the overlay holds exactly what the agent did and the turn's outcome follows its
 * exit; a steer stops the first run, --on-busy reject starts nothing; Ctrl-C past the grace
 * period cancels the turn with nothing lost; the sandbox keeps the agent's writes in its
 * environment and hides other environments and the server's data; an environment this client
 * cannot see is refused before anything starts, naming the instance whose disk holds it. The
 * turn records the command's exit code or signal, and the agent's own commit messages become the
 * changeset's default commit message. On one instance, and (PostgreSQL) on two; with auth on, a
 * caller who is not an admin is refused before a turn begins.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBerth, type TestBerth } from "../support/berth.js";
import { needs } from "../support/services.js";
import { BIN, ROOT, berthJson, cliEnv, gitFixture } from "./helpers.js";

/** Outside /tmp: the sandbox's /tmp is private, so a path there would prove nothing. */
const OUTSIDE = mkdtempSync("/var/tmp/berth-run-test-");

interface Run {
  readonly child: ChildProcess;
  stdout: string;
  stderr: string;
  readonly exited: Promise<number>;
}

/** `berth run …` (or any berth command line, `prefix` before node), its output collected. */
function start(args: readonly string[], env: Record<string, string> = {}, prefix: readonly string[] = [], stdin?: string): Run {
  const [file, ...rest] = [...prefix, process.execPath, BIN, ...args];
  const child = spawn(file!, rest, { cwd: ROOT, env: cliEnv(env), stdio: [stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
  if (stdin !== undefined) child.stdin!.end(stdin);
  const run: Run = {
    child,
    stdout: "",
    stderr: "",
    // "close", not "exit": the output may still be in the pipes when the process has exited.
    exited: new Promise((resolve) => child.once("close", (code, signal) => resolve(code ?? (signal ? -1 : -2)))),
  };
  child.stdout!.on("data", (d: Buffer) => (run.stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (run.stderr += d.toString()));
  return run;
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Turn {
  turnId: string;
  state: string;
  outcome?: string;
  environmentPath: string;
  exitCode?: number;
  exitSignal?: string;
  commitMessages?: string[];
}

/** Each test starts several CLI processes and cold environments: seconds each on a loaded 2-core machine. */
const SLOW = { timeout: 180_000 };

function suite(instances: number): void {
  let server: TestBerth;
  let url: string;
  let secondUrl: string;
  let envRoot: string;
  let repoCount = 0;

  beforeAll(async () => {
    envRoot = mkdtempSync(path.join(tmpdir(), "berth-run-envs-"));
    server = await startBerth({ instances, env: { BERTH_ENV_ROOT: envRoot } });
    url = server.server.httpUrl;
    secondUrl = server.servers[instances - 1]!.httpUrl;
  }, 120_000);
  afterAll(async () => {
    await server?.close();
  });

  const json = <T = Record<string, unknown>>(...args: string[]) => berthJson<T>([...args, "--server", url]);

  /** A session of a new repository (`source`, a git fixture) and its changeset. */
  async function newWorkspace(intent = ""): Promise<{ sessionId: string; changesetId: string; source: string }> {
    const name = `run-${process.pid}-${instances}-${++repoCount}`;
    const source = gitFixture();
    await json("repos", "add", name, "--source", source);
    const ws = await json<{ workspace: { sessionId: string; changesetId: string } }>("workspace", "create", "--repo", name, "--mode", "persistent", "--agent", "agent-run", ...(intent ? ["--intent", intent] : []));
    return { ...ws.workspace, source };
  }
  const newSession = async () => (await newWorkspace()).sessionId;
  /** Instance i's BERTH_ENV_ROOT (startBerth gives each instance after the first a root of its own). */
  const envRootOf = (i: number) => (i === 0 ? envRoot : `${envRoot}.instance-${i + 1}`);

  const turnsOf = async (sessionId: string) => (await json<{ turns?: Turn[] }>("turn", "ls", "--session", sessionId)).turns ?? [];
  const diffPaths = async (sessionId: string) =>
    ((await json<{ paths?: { path: string; change: string }[] }>("diff", sessionId)).paths ?? []).map((p) => `${p.change.replace("FILE_CHANGE_", "")} ${p.path}`);

  it("runs an agent that edits, creates, deletes and commits: the overlay holds exactly its edits, the turn is COMPLETED and the summary lists them", SLOW, async () => {
    const s = await newSession();
    const agent = [
      "set -e",
      'test "$PWD" = "$BERTH_ENVIRONMENT"',
      'echo "$BERTH_SESSION_ID $BERTH_TURN_ID $BERTH_CHANGESET_ID $BERTH_SERVER" > ids.txt',
      // The map's text may be empty (a walk over its budget on a loaded machine): the file is there.
      'test -f "$BERTH_WORKSPACE_MAP"',
      'echo "# changed" >> README.md',
      "echo new > new.txt",
      "rm index.ts",
      "git add -A",
      "git -c user.name=agent -c user.email=agent@example.com commit -q -m 'agent: edits'",
    ].join("\n");
    const r = start(["run", s, "--server", url, "--", "sh", "-c", agent]);
    const code = await r.exited;
    expect(code, r.stderr).toBe(0);
    expect(await diffPaths(s)).toEqual(["MODIFIED README.md", "ADDED ids.txt", "DELETED index.ts", "ADDED new.txt"]);
    const [turn] = await turnsOf(s);
    expect(turn!.state).toBe("TURN_STATE_ENDED");
    expect(turn!.outcome).toBe("TURN_OUTCOME_COMPLETED");
    expect(turn!.exitCode).toBe(0);
    expect(turn!.commitMessages).toEqual(["agent: edits"]);
    expect(r.stderr).toMatch(new RegExp(`turn ${turn!.turnId}: completed \\(exit 0\\)`));
    expect(r.stderr).toMatch(/captured: .*README\.md/);
    for (const p of ["README.md", "index.ts", "new.txt", "ids.txt"]) expect(r.stderr).toContain(p);
    const ws = await json<{ workspace: { changesetId: string } }>("workspace", "show", s);
    expect(readFileSync(path.join(turn!.environmentPath, "ids.txt"), "utf8").trim()).toBe(`${s} ${turn!.turnId} ${ws.workspace.changesetId} ${url}`);
  });

  it("gives the command its changeset's open review comments in $BERTH_COMMENTS, a file outside the environment (never captured)", SLOW, async () => {
    const { sessionId, changesetId } = await newWorkspace();
    const open = await json<{ comment: { id: string } }>("comment", "add", changesetId, "--path", "README.md", "--line", "1", "say what it does");
    const handled = await json<{ comment: { id: string } }>("comment", "add", changesetId, "already handled");
    // A comment's short id resolves like a session's.
    await json("comment", "resolve", handled.comment.id.slice(0, 8));
    const r = start(["run", sessionId, "--server", url, "--", "sh", "-c", 'cat "$BERTH_COMMENTS"; case "$BERTH_COMMENTS" in "$PWD"/*) exit 9;; esac']);
    expect(await r.exited, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      changeset_id: changesetId,
      comments: [{ id: open.comment.id, path: "README.md", line: 1, body: "say what it does", author: "anonymous", created_at: expect.any(String), resolved: false }],
    });
    expect(await diffPaths(sessionId)).toEqual([]);
    const all = await json<{ comments: { id: string; resolved?: boolean; resolvedBy?: string }[] }>("comment", "ls", changesetId, "--all");
    expect(all.comments.map((c) => [c.id, c.resolved ?? false])).toEqual([[open.comment.id, false], [handled.comment.id, true]]);
  });

  it("ends the turn FAILED and exits with the agent's code when the agent exits 3, its edits captured", SLOW, async () => {
    const s = await newSession();
    const r = start(["run", s, "--server", url, "--json", "--", "sh", "-c", "echo half > half.txt; exit 3"]);
    expect(await r.exited, r.stderr).toBe(3);
    const [turn] = await turnsOf(s);
    expect(turn!.outcome).toBe("TURN_OUTCOME_FAILED");
    expect(turn!.exitCode).toBe(3);
    expect(turn!.exitSignal).toBeUndefined();
    // --json: the summary is the last line on stderr, one object.
    const summary = JSON.parse(r.stderr.trim().split("\n").at(-1)!) as Record<string, unknown>;
    expect(summary).toMatchObject({ turnId: turn!.turnId, outcome: "failed", exitCode: 3, capturedPaths: ["half.txt"], diffStat: [{ path: "half.txt", added: 1, removed: 0 }] });
    expect(await diffPaths(s)).toEqual(["ADDED half.txt"]);
  });

  it("gives the agent the user's stdin and stdout", SLOW, async () => {
    const s = await newSession();
    const r = start(["run", s, "--server", url, "--", "sh", "-c", "cat > typed.txt; echo agent-says-hi"], {}, [], "typed by the user\n");
    expect(await r.exited, r.stderr).toBe(0);
    expect(r.stdout).toBe("agent-says-hi\n");
    expect(readFileSync(path.join((await turnsOf(s))[0]!.environmentPath, "typed.txt"), "utf8")).toBe("typed by the user\n");
  });

  it("stops the first run's agent when a second run supersedes it (a steer), and the first says it was superseded", SLOW, async () => {
    const s = await newSession();
    const first = start(["run", s, "--server", url, "--grace", "5", "--", "sh", "-c", "echo one > one.txt; echo ready; while :; do sleep 0.1; done"]);
    await until("the first agent runs", () => first.stdout.includes("ready"));
    // The steer reaches the other instance when there are two: it is forwarded to the first's.
    const second = start(["run", s, "--server", secondUrl, "--on-busy", "supersede", "--", "sh", "-c", "echo two > two.txt"]);
    expect(await first.exited, first.stderr).toBe(124);
    expect(first.stderr).toMatch(/was superseded by another turn/);
    expect(await second.exited, second.stderr).toBe(0);
    expect(await diffPaths(s)).toEqual(["ADDED one.txt", "ADDED two.txt"]);
  });

  it("refuses with TURN_IN_PROGRESS before starting anything when --on-busy reject finds a turn running", SLOW, async () => {
    const s = await newSession();
    const first = start(["run", s, "--server", url, "--grace", "1", "--", "sh", "-c", "echo ready; while :; do sleep 0.1; done"]);
    await until("the first agent runs", () => first.stdout.includes("ready"));
    const marker = path.join(OUTSIDE, `rejected-started-${instances}`);
    const second = start(["run", s, "--server", secondUrl, "--on-busy", "reject", "--no-sandbox", "--", "sh", "-c", `touch ${marker}`]);
    expect(await second.exited).toBe(125);
    expect(second.stderr).toContain("TURN_IN_PROGRESS");
    expect(existsSync(marker)).toBe(false);
    const [turn] = await turnsOf(s);
    expect(turn!.state).toBe("TURN_STATE_RUNNING");
    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(128 + 15);
  });

  it("ends the turn within the grace period when SIGINT reaches run under an agent that ignores it, with nothing written lost", SLOW, async () => {
    const s = await newSession();
    const r = start(["run", s, "--server", url, "--grace", "1", "--", "sh", "-c", "trap '' INT; echo kept > kept.txt; echo ready; while :; do sleep 0.1; done"]);
    await until("the agent runs", () => r.stdout.includes("ready"));
    const sent = Date.now();
    r.child.kill("SIGINT");
    expect(await r.exited, r.stderr).toBe(130);
    // Generous: the grace (1 s) plus the cancel and its capture on a loaded machine.
    expect(Date.now() - sent).toBeLessThan(30_000);
    const [turn] = await turnsOf(s);
    expect(turn!.state).toBe("TURN_STATE_CANCELLED");
    expect(await diffPaths(s)).toEqual(["ADDED kept.txt"]);
    expect(r.stderr).toMatch(/interrupted \(SIGINT, then SIGKILL after 1s\)/);
  });

  it("keeps a sandboxed agent from writing outside, reading another session's environment or the server's data directory, while its writes inside land", SLOW, async () => {
    // Another session's environment, parked on the server's disk.
    const other = await newSession();
    const parked = start(["run", other, "--server", url, "--", "sh", "-c", "echo other-secret > secret.txt"]);
    expect(await parked.exited, parked.stderr).toBe(0);
    const otherEnv = (await turnsOf(other))[0]!.environmentPath;
    expect(readFileSync(path.join(otherEnv, "secret.txt"), "utf8")).toBe("other-secret\n");
    const dataDir = mkdtempSync(path.join(OUTSIDE, "data-"));
    writeFileSync(path.join(dataDir, "pg-secret"), "data-secret\n");
    const tokens = path.join(OUTSIDE, `tokens-${instances}.json`);
    writeFileSync(tokens, "token-secret\n");
    const escape = path.join(OUTSIDE, `escaped-${instances}`);

    const s = await newSession();
    const agent = [
      `echo x > ${escape} 2>/dev/null && echo write-outside:ok >> report.txt || echo write-outside:refused >> report.txt`,
      `cat ${otherEnv}/secret.txt >/dev/null 2>&1 && echo read-other:ok >> report.txt || echo read-other:refused >> report.txt`,
      `cat ${dataDir}/pg-secret >/dev/null 2>&1 && echo read-data:ok >> report.txt || echo read-data:refused >> report.txt`,
      `grep -q token-secret ${tokens} 2>/dev/null && echo read-tokens:ok >> report.txt || echo read-tokens:refused >> report.txt`,
      "echo inside > inside.txt",
    ].join("\n");
    const r = start(["run", s, "--server", url, "--", "sh", "-c", agent], { BERTH_DATA_DIR: dataDir, BERTH_AUTH_TOKENS_FILE: tokens });
    expect(await r.exited, r.stderr).toBe(0);
    const env = (await turnsOf(s))[0]!.environmentPath;
    expect(readFileSync(path.join(env, "report.txt"), "utf8")).toBe(["write-outside:refused", "read-other:refused", "read-data:refused", "read-tokens:refused", ""].join("\n"));
    expect(existsSync(escape)).toBe(false);
    expect(await diffPaths(s)).toEqual(["ADDED inside.txt", "ADDED report.txt"]);
  });

  it("records the signal that killed the agent, sandboxed or not, with no exit code", SLOW, async () => {
    const s = await newSession();
    // Sandboxed: bwrap reports the death as 128 + 15, which run reads back as SIGTERM.
    const boxed = start(["run", s, "--server", url, "--", "sh", "-c", "kill -TERM $$"]);
    expect(await boxed.exited, boxed.stderr).toBe(128 + 15);
    const [first] = await turnsOf(s);
    expect({ outcome: first!.outcome, exitCode: first!.exitCode, exitSignal: first!.exitSignal }).toEqual({ outcome: "TURN_OUTCOME_FAILED", exitCode: undefined, exitSignal: "SIGTERM" });
    expect(boxed.stderr).toMatch(new RegExp(`turn ${first!.turnId}: failed \\(exit 143, SIGTERM\\)`));
    const bare = start(["run", s, "--server", url, "--no-sandbox", "--", "sh", "-c", "kill -KILL $$"]);
    expect(await bare.exited, bare.stderr).toBe(128 + 9);
    const [second] = await turnsOf(s);
    expect({ exitCode: second!.exitCode, exitSignal: second!.exitSignal }).toEqual({ exitCode: undefined, exitSignal: "SIGKILL" });
  });

  it("refuses, before starting the command, an environment this client cannot reach, names the instance holding it, and cancels the turn it began", SLOW, async () => {
    const s = await newSession();
    const marker = path.join(OUTSIDE, `unreachable-started-${instances}`);
    // This client's filesystem lacks the servers' environment roots, as a client on another host's
    // does: run in a mount namespace where each root is an empty directory.
    const hideAll = server.servers.flatMap((_, i) => ["--tmpfs", envRootOf(i)]);
    const r = start(["run", s, "--server", url, "--no-sandbox", "--", "sh", "-c", `touch ${marker}`], {}, ["bwrap", "--dev-bind", "/", "/", ...hideAll]);
    expect(await r.exited, r.stderr).toBe(125);
    // A session nobody holds begins where the call lands: the first instance (url).
    const holder = server.servers[0]!;
    expect(r.stderr).toContain(`is on the disk of Berth instance`);
    expect(r.stderr).toContain(`id ${holder.instanceId}, gRPC at ${holder.advertiseAddress}`);
    expect(r.stderr).toMatch(/not reachable here .*run `berth run` on that instance's host/);
    expect(existsSync(marker)).toBe(false);
    const [turn] = await turnsOf(s);
    expect(turn!.state).toBe("TURN_STATE_CANCELLED");
  });

  it("names the instance whose disk holds the session's environment when this client cannot see that disk, the call reaching another instance", SLOW, async () => {
    const s = await newSession();
    // The environment is parked on the last instance (the second, on two).
    const parked = start(["run", s, "--server", secondUrl, "--", "sh", "-c", "echo parked > parked.txt"]);
    expect(await parked.exited, parked.stderr).toBe(0);
    const last = instances - 1;
    const holder = server.servers[last]!;
    expect((await turnsOf(s))[0]!.environmentPath.startsWith(envRootOf(last) + path.sep)).toBe(true);
    // From the first instance's host, which sees its own root but not the holder's.
    const marker = path.join(OUTSIDE, `held-elsewhere-started-${instances}`);
    const r = start(["run", s, "--server", url, "--no-sandbox", "--", "sh", "-c", `touch ${marker}`], {}, ["bwrap", "--dev-bind", "/", "/", "--tmpfs", envRootOf(last)]);
    expect(await r.exited, r.stderr).toBe(125);
    expect(r.stderr).toContain(`id ${holder.instanceId}, gRPC at ${holder.advertiseAddress}`);
    expect(existsSync(marker)).toBe(false);
    const [turn] = await turnsOf(s);
    expect(turn!.state).toBe("TURN_STATE_CANCELLED");
    expect(await diffPaths(s)).toEqual(["ADDED parked.txt"]);
  });

  it("offers the agent's own commit messages, after the intent, as the changeset's default commit message; an explicit message still wins", SLOW, async () => {
    const { sessionId: s, changesetId, source } = await newWorkspace("Fix the parsing bug");
    const agent = ["set -e", "echo 'export const answer = 43;' > index.ts", "git -c user.name=agent -c user.email=agent@example.com commit -q -am 'fix parser'"].join("\n");
    const r = start(["run", s, "--server", url, "--", "sh", "-c", agent]);
    expect(await r.exited, r.stderr).toBe(0);
    // A second turn, on the other instance when there are two: its commit is read too, after the first's.
    const again = start(["run", s, "--server", secondUrl, "--", "sh", "-c", "git -c user.name=agent -c user.email=agent@example.com commit -q --allow-empty -m 'parser: cover the empty header'"]);
    expect(await again.exited, again.stderr).toBe(0);
    await json("commit", changesetId);
    const message = execFileSync("git", ["-C", source, "log", "-1", "--format=%B", `berth/${changesetId}`], { encoding: "utf8" });
    expect(message).toBe("Fix the parsing bug\n\nfix parser\n\nparser: cover the empty header\n\n");
    await json("commit", changesetId, "-m", "Parser: the empty header");
    expect(execFileSync("git", ["-C", source, "log", "-1", "--format=%B", `berth/${changesetId}`], { encoding: "utf8" })).toBe("Parser: the empty header\n\n");
  });

  it("refuses to run unsandboxed when bubblewrap is missing, saying why, unless --no-sandbox is given", SLOW, async () => {
    const s = await newSession();
    const noBwrap = mkdtempSync(path.join(OUTSIDE, "path-"));
    const r = start(["run", s, "--server", url, "--", "/bin/sh", "-c", "echo ran > ran.txt"], { PATH: noBwrap });
    expect(await r.exited).toBe(125);
    expect(r.stderr).toMatch(/cannot sandbox the command: bubblewrap \(bwrap\) is not installed.*--no-sandbox/);
    expect(await turnsOf(s)).toEqual([]);
    const unconfined = start(["run", s, "--server", url, "--no-sandbox", "--", "/bin/sh", "-c", "echo ran > ran.txt"], { PATH: noBwrap });
    expect(await unconfined.exited, unconfined.stderr).toBe(0);
    expect(await diffPaths(s)).toEqual(["ADDED ran.txt"]);
  });

  it("refuses a command it cannot find with 127 before beginning a turn", SLOW, async () => {
    const s = await newSession();
    const r = start(["run", s, "--server", url, "--", "no-such-agent-here"]);
    expect(await r.exited).toBe(127);
    expect(r.stderr).toContain("no-such-agent-here: command not found");
    expect(await turnsOf(s)).toEqual([]);
  });
}

describe("berth run on one instance", () => suite(1));
needs({ postgres: true })("berth run on two instances", () => suite(2));

describe("berth run with auth on", () => {
  const sha = (t: string) => createHash("sha256").update(t).digest("hex");
  const ALICE = randomBytes(16).toString("hex");
  const OPS = randomBytes(16).toString("hex");
  let server: TestBerth;

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "berth-run-auth-"));
    const tokens = path.join(dir, "tokens.json");
    writeFileSync(tokens, JSON.stringify({ tokens: [
      { sha256: sha(ALICE), agent_id: "alice", roles: ["agent"], repos: ["*"] },
      { sha256: sha(OPS), agent_id: "ops", roles: ["agent", "admin"] },
    ] }));
    server = await startBerth({ instances: 1, env: { BERTH_AUTH: "token", BERTH_AUTH_TOKENS_FILE: tokens, BERTH_ENV_ROOT: path.join(dir, "envs") } });
  }, 120_000);
  afterAll(async () => {
    await server?.close();
  });

  it("refuses a caller who is not an admin before a turn begins, saying an admin token is needed; an admin's run goes ahead", SLOW, async () => {
    const url = server.server.httpUrl;
    const as = (token: string) => ({ BERTH_TOKEN: token });
    // A source_path is an admin's to register.
    await berthJson(["repos", "add", `run-auth-${process.pid}`, "--source", gitFixture(), "--server", url], as(OPS));
    const ws = await berthJson<{ workspace: { sessionId: string } }>(["workspace", "create", "--repo", `run-auth-${process.pid}`, "--mode", "persistent", "--agent", "alice", "--server", url], as(ALICE));
    const s = ws.workspace.sessionId;
    const marker = path.join(OUTSIDE, "not-admin-started");
    const refused = start(["run", s, "--server", url, "--no-sandbox", "--", "sh", "-c", `touch ${marker}`], as(ALICE));
    expect(await refused.exited).toBe(125);
    expect(refused.stderr).toContain("berth run needs an admin token");
    expect(refused.stderr).toContain("nothing began");
    expect(existsSync(marker)).toBe(false);
    const turnsAs = async (token: string) => (await berthJson<{ turns?: Turn[] }>(["turn", "ls", "--session", s, "--server", url], as(token))).turns ?? [];
    expect(await turnsAs(OPS)).toEqual([]);

    const admin = start(["run", s, "--server", url, "--", "sh", "-c", "echo by-ops > ops.txt"], as(OPS));
    expect(await admin.exited, admin.stderr).toBe(0);
    expect((await turnsAs(ALICE)).map((t) => t.outcome)).toEqual(["TURN_OUTCOME_COMPLETED"]);
  });
});
