/**
 * Runs the real berth binary (bin/berth.js through tsx) the way a person or a script does.
 * A --server / BERTH_SERVER naming a startBerth cluster of several instances
 * (BERTH_TEST_INSTANCES=2) is sent to the next instance, one per process (test/support/instances.ts).
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { nextHttpUrl } from "../support/instances.js";

export const ROOT = path.resolve(import.meta.dirname, "../..");
export const BIN = path.join(ROOT, "bin/berth.js");

export interface Result {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The environment without the caller's BERTH_SERVER / BERTH_TOKEN, plus `extra`. */
export function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const name of ["BERTH_SERVER", "BERTH_TOKEN"]) if (!(name in extra)) delete env[name];
  return env;
}

/**
 * The command line and environment of one `berth` process, its server the next instance when
 * --server (else BERTH_SERVER) names a cluster of several: one process, one instance, as a
 * per-call balancer would send a one-call command.
 */
function routed(args: readonly string[], extraEnv: Record<string, string>): { args: string[]; env: Record<string, string> } {
  const out = [...args];
  const i = out.findIndex((a) => a === "--server" || a.startsWith("--server="));
  if (i >= 0) {
    if (out[i] === "--server") {
      if (i + 1 < out.length) out[i + 1] = nextHttpUrl(out[i + 1]!);
    } else {
      out[i] = `--server=${nextHttpUrl(out[i]!.slice("--server=".length))}`;
    }
    return { args: out, env: extraEnv };
  }
  return { args: out, env: extraEnv.BERTH_SERVER ? { ...extraEnv, BERTH_SERVER: nextHttpUrl(extraEnv.BERTH_SERVER) } : extraEnv };
}

/** Runs `berth …args` to completion; never rejects (the exit code is in the result). */
export function berth(commandLine: readonly string[], commandEnv: Record<string, string> = {}): Promise<Result> {
  const { args, env: extraEnv } = routed(commandLine, commandEnv);
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: cliEnv(extraEnv), timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === "number" ? ((err as { code: number }).code) : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** `berth … --json`, parsed; fails loudly with stderr when the command failed. */
export async function berthJson<T = Record<string, unknown>>(args: readonly string[], extraEnv: Record<string, string> = {}): Promise<T> {
  const r = await berth([...args, "--json"], extraEnv);
  if (r.code !== 0) throw new Error(`berth ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

/** A long-running `berth events watch …`: its stdout lines as they arrive. */
export class Watcher {
  readonly lines: string[] = [];
  stderr = "";
  private readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  private waiters: (() => void)[] = [];

  constructor(commandLine: readonly string[], commandEnv: Record<string, string> = {}) {
    const { args, env: extraEnv } = routed(commandLine, commandEnv);
    this.child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: cliEnv(extraEnv), stdio: ["ignore", "pipe", "pipe"] });
    this.child.stderr!.on("data", (d: Buffer) => (this.stderr += d.toString()));
    createInterface({ input: this.child.stdout! }).on("line", (line) => {
      this.lines.push(line);
      for (const w of this.waiters.splice(0)) w();
    });
    this.exited = new Promise((resolve) => this.child.once("exit", (code) => resolve(code)));
  }

  /** Waits until at least n lines have arrived. */
  async waitForLines(n: number, timeoutMs = 30_000): Promise<string[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.lines.length < n) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`expected ${n} lines, got ${this.lines.length}: ${this.lines.join("\n")}\nstderr: ${this.stderr}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.lines.slice(0, n);
  }

  /** Waits until stderr matches (e.g. a reconnect notice). */
  async waitForStderr(pattern: RegExp, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pattern.test(this.stderr)) {
      if (Date.now() > deadline) throw new Error(`stderr never matched ${pattern}: ${this.stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  kill(): void {
    this.child.kill("SIGTERM");
  }
}

/** A committed git repository with a few files (a source for turns and the workspace map). */
export function gitFixture(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-cli-src-"));
  const git = (...args: string[]) => execFileSync("git", ["-C", dir, ...args], { stdio: "pipe" });
  git("init", "-q", "-b", "main");
  git("config", "user.email", "t@example.com");
  git("config", "user.name", "t");
  writeFileSync(path.join(dir, "README.md"), "# fixture\n");
  writeFileSync(path.join(dir, "index.ts"), "export const answer = 42;\n");
  git("add", "-A");
  git("commit", "-q", "-m", "fixture");
  return dir;
}
