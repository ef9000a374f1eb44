/**
 * The README's tour with the berth command, run as pasted: the lines of its "The tour with the
 * berth command" block run one after another with sh against a real server and a real git
 * repository, the variables they set (`A=$(…)`) kept for the lines after, `… &` left running
 * in the background as a shell would; and what each line prints (stdout and stderr, in the
 * order written, as a terminal shows them) must be what the README shows under it
 * (./readme-tour.ts says what the README may shorten).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBerth, type TestBerth } from "../support/berth.js";
import { BIN, ROOT } from "../cli/helpers.js";
import { run } from "./helpers.js";
import { differences, readmeSteps, Tokens } from "./readme-tour.js";

/** `NAME=$(…)` alone on a line: a variable the lines after use. */
const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)=\$\(/;

interface Background {
  readonly lines: string[];
  readonly exited: Promise<number | null>;
  /** Resolves once n lines have been printed. */
  lineCount(n: number): Promise<void>;
}

/** Runs `script` with sh, stderr into stdout (one stream, in order); the value of `variable` afterwards on fd 3. */
function sh(script: string, env: NodeJS.ProcessEnv, variable?: string): Promise<{ code: number | null; output: string; value: string }> {
  return new Promise((resolve, reject) => {
    const tail = variable ? `\nprintf '%s' "$${variable}" >&3` : "";
    const child = spawn("sh", ["-c", `exec 2>&1\n${script}${tail}`], { env, stdio: ["ignore", "pipe", "ignore", "pipe"] });
    let output = "";
    let value = "";
    child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
    (child.stdio[3] as NodeJS.ReadableStream).on("data", (d: Buffer) => (value += d.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, output, value }));
  });
}

/** Starts `script` in the background, stderr into stdout, collecting its lines. */
function background(script: string, env: NodeJS.ProcessEnv): Background {
  const child = spawn("sh", ["-c", `exec 2>&1\n${script}`], { env, stdio: ["ignore", "pipe", "ignore"] });
  const lines: string[] = [];
  const waiters: (() => void)[] = [];
  createInterface({ input: child.stdout }).on("line", (l) => {
    lines.push(l);
    for (const w of waiters.splice(0)) w();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    lines,
    exited,
    async lineCount(n) {
      while (lines.length < n) await Promise.race([new Promise<void>((r) => waiters.push(r)), exited.then(() => Promise.reject(new Error(`exited after ${lines.length} line(s): ${lines.join("\n")}`)))]);
    },
  };
}

describe("the README's berth command tour", () => {
  let berth: TestBerth;
  let dir: string;
  beforeAll(async () => {
    berth = await startBerth({ env: { BERTH_ENV_ROOT: mkdtempSync(path.join(tmpdir(), "berth-tour-envs-")) } });
    dir = mkdtempSync(path.join(tmpdir(), "berth-tour-"));
    rmSync(dir, { recursive: true });
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("runs every line as pasted, each printing what the README shows: two agents, files, claims, a turn, strand and resume while held, the merged commit", { timeout: 240_000 }, async () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      BERTH_SERVER: berth.server.httpUrl,
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@example.com",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@example.com",
    };
    delete env["BERTH_TOKEN"];
    // The README's repository path is a fresh directory here, and `npx berth` this checkout's command.
    const toLocal = (line: string) => line.replaceAll("/tmp/berth-tour", dir).replaceAll("npx berth", `${process.execPath} ${BIN}`);
    const toReadme = (text: string) => text.replaceAll(dir, "/tmp/berth-tour");

    const steps = readmeSteps(ROOT, "## The tour with the berth command");
    expect(steps.some((s) => s.command.endsWith(" &"))).toBe(true);
    expect(steps.filter((s) => ASSIGNMENT.test(s.command)).length).toBeGreaterThanOrEqual(4);

    const tokens = new Tokens();
    const problems: string[] = [];
    const held: Background[] = [];
    let last = "";
    for (const step of steps) {
      const line = toLocal(step.command);
      let printed: string;
      if (line.endsWith(" &")) {
        const b = background(line.slice(0, -2), env);
        held.push(b);
        await b.lineCount(step.shown.length);
        printed = b.lines.slice(0, step.shown.length).join("\n");
      } else {
        const variable = ASSIGNMENT.exec(line)?.[1];
        const r = await sh(line, env, variable);
        expect(r.code, `${step.command}\n${r.output}`).toBe(0);
        if (variable) {
          expect(r.value, `${step.command} set no ${variable}\n${r.output}`).not.toBe("");
          env[variable] = r.value;
        }
        printed = r.output;
      }
      last = printed;
      for (const d of differences(step.shown, toReadme(printed), tokens)) problems.push(`${step.command}\n  ${d}`);
    }
    expect(problems, `what the README shows differs from what was printed:\n${problems.join("\n")}`).toEqual([]);

    // The heartbeat held the ephemeral session until it was stranded under it (and, by its next beat, resumed), then said so and exited 1.
    expect(await held[0]!.exited).toBe(1);
    expect(held[0]!.lines.slice(1).join("\n")).toMatch(/is no longer active|SESSION_STRANDED|SESSION_RESUMED/);
    const lines = last.trim().split("\n");
    expect(lines[0]).toMatch(/^[0-9a-f]+ Say hello$/);
    // main is checked out in the tour's repository: the merge brought its work tree along.
    const status = await run("git", ["-C", dir, "status", "--porcelain"], { env });
    expect(status.stdout).toBe("");
    expect(readFileSync(path.join(dir, "hello.txt"), "utf8")).toBe("hello\n");
  });
});
