/**
 * A README tour as a transcript: its ```sh block read as commands, each followed by the lines
 * it prints (`# …`), and the comparison of what a command printed with what the README shows.
 *
 * What the README may shorten, and how a shown line is matched:
 * - an id or a hash written as its first characters and `…` (`5e2b1c9a…`), or a bare hex run of
 *   7 to 64 characters (`8c2e1f0`, a sha256), stands for whatever id or hash is printed there —
 *   but the same way everywhere: one shown token is one printed value across the whole tour, and
 *   one printed value one shown token (checked by Tokens);
 * - any other `…` stands for any text;
 * - times (`2026-05-01 12:00:00`, `2026-05-01T12:00:00.000Z`) stand for any time;
 * - a run of two or more spaces (table and key/value alignment) for any run of two or more.
 *
 * runTour runs the steps as pasted into one shell would: one after another with sh, the
 * variables a line sets (`A=$(…)`) kept for the lines after, `… &` left running in the
 * background, each line's stderr into its stdout (in the order written, as a terminal shows).
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";

/** The environment a tour's lines run in, as a new user's shell: the server named, no token, git with a fixed identity and no user config. */
export function tourEnv(serverUrl: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    BERTH_SERVER: serverUrl,
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_AUTHOR_NAME: "t",
    GIT_AUTHOR_EMAIL: "t@example.com",
    GIT_COMMITTER_NAME: "t",
    GIT_COMMITTER_EMAIL: "t@example.com",
  };
  delete env["BERTH_TOKEN"];
  return env;
}

export interface Step {
  /** The command line as written (trailing comments included: the shell ignores them). */
  readonly command: string;
  /** What the README shows it prints, the `# ` taken off. */
  readonly shown: readonly string[];
}

/** The ```sh block of `README.md` that follows `heading` (the nth one, default the first), as steps. */
export function readmeSteps(root: string, heading: string, nth = 0): Step[] {
  const readme = readFileSync(path.join(root, "README.md"), "utf8");
  const from = readme.indexOf(heading);
  if (from < 0) throw new Error(`README.md has no "${heading}"`);
  const next = readme.indexOf("\n## ", from + heading.length);
  const section = readme.slice(from, next < 0 ? undefined : next);
  const block = [...section.matchAll(/```sh\n([\s\S]*?)```/g)][nth]?.[1];
  if (block === undefined) throw new Error(`no sh block ${nth} under "${heading}"`);
  const steps: { command: string; shown: string[] }[] = [];
  for (const line of block.replace(/\\\n\s*/g, "").split("\n")) {
    if (line === "") continue;
    if (line === "#" || line.startsWith("# ")) {
      const last = steps[steps.length - 1];
      if (!last) throw new Error(`output before any command: ${line}`);
      last.shown.push(line.slice(2));
    } else {
      steps.push({ command: line, shown: [] });
    }
  }
  return steps;
}

const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
/** What a shown token may stand for: an id, or a hash (git's abbreviated or whole, a sha256). */
const VALUE = `(${UUID}|[0-9a-f]{7,64})`;
/** In a shown line: a shortened id or hash, a bare hash, a time, an elision, an alignment. */
const SHOWN_PARTS = /([0-9a-f]{4,}…|\b[0-9a-f]{7,64}\b)|(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?Z?)|(…)|( {2,})/g;

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/** A shown line as a pattern, and the shown tokens its groups capture, in order. */
function pattern(shown: string): { re: RegExp; tokens: string[] } {
  const tokens: string[] = [];
  let out = "";
  let at = 0;
  for (const m of shown.matchAll(SHOWN_PARTS)) {
    out += escape(shown.slice(at, m.index));
    if (m[1] !== undefined) {
      tokens.push(m[1]);
      out += VALUE;
    } else if (m[2] !== undefined) {
      out += m[2].includes("T") ? "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(?:\\.\\d+)?Z" : "\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d";
    } else if (m[3] !== undefined) {
      out += ".*?";
    } else {
      out += " {2,}";
    }
    at = m.index + m[0].length;
  }
  out += escape(shown.slice(at));
  return { re: new RegExp(`^${out}$`), tokens };
}

/** The shown tokens and the printed values they stand for: one to one across a tour. */
export class Tokens {
  private readonly value = new Map<string, string>();
  private readonly token = new Map<string, string>();

  /** Pairs them, or says why it cannot. */
  pair(token: string, value: string): string | undefined {
    const v = this.value.get(token);
    const t = this.token.get(value);
    if (v !== undefined && v !== value) return `${token} stood for ${v} before, here for ${value}`;
    if (t !== undefined && t !== token) return `${value} was shown as ${t} before, here as ${token}`;
    this.value.set(token, value);
    this.token.set(value, token);
    return undefined;
  }
}

/**
 * The differences between what a command printed and what the README shows for it (none: the
 * empty list), pairing tokens in `tokens`.
 */
export function differences(shown: readonly string[], printed: string, tokens: Tokens): string[] {
  const lines = printed.replace(/\n$/, "").split("\n");
  if (printed === "") lines.length = 0;
  const out: string[] = [];
  if (lines.length !== shown.length) out.push(`${lines.length} line(s) printed, ${shown.length} shown`);
  for (let i = 0; i < Math.min(lines.length, shown.length); i++) {
    const { re, tokens: names } = pattern(shown[i]!);
    const m = re.exec(lines[i]!);
    if (!m) {
      out.push(`line ${i + 1}: printed ${JSON.stringify(lines[i])}, shown ${JSON.stringify(shown[i])}`);
      continue;
    }
    names.forEach((name, k) => {
      const why = tokens.pair(name, m[k + 1]!);
      if (why) out.push(`line ${i + 1}: ${why}`);
    });
  }
  return out;
}

/** `NAME=$(…)` at the start of a line: a variable the lines after use. */
const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)=\$\(/;

/** A line left running in the background. */
export interface Background {
  readonly lines: string[];
  readonly exited: Promise<number | null>;
}

/** Runs `script` with sh, stderr into stdout; the value of `variable` afterwards comes on fd 3. */
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

/** Starts `script` in the background, stderr into stdout; resolves once it has printed `count` lines. */
async function background(script: string, env: NodeJS.ProcessEnv, count: number): Promise<Background> {
  const child = spawn("sh", ["-c", `exec 2>&1\n${script}`], { env, stdio: ["ignore", "pipe", "ignore"] });
  const lines: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    if (count === 0) resolve();
    createInterface({ input: child.stdout }).on("line", (l) => {
      lines.push(l);
      if (lines.length === count) resolve();
    });
    void exited.then(() => reject(new Error(`${script} exited after ${lines.length} line(s): ${lines.join("\n")}`)));
  });
  return { lines, exited };
}

export interface TourOptions {
  /** The environment of the first line; the variables lines set are added to it. */
  readonly env: NodeJS.ProcessEnv;
  /** The line as run here (paths, the berth command). */
  readonly toLocal: (line: string) => string;
  /** What a line printed as the README would show it (paths back). */
  readonly toReadme: (printed: string) => string;
}

export interface TourResult {
  /** Every difference between what a line printed and what the README shows, with its line. */
  readonly problems: string[];
  /** The lines left running, in order. */
  readonly background: Background[];
  /** What each step printed, in order. */
  readonly printed: string[];
}

/** Runs the steps (./readme-tour.ts above); a line that fails (exit ≠ 0) fails the tour. */
export async function runTour(steps: readonly Step[], options: TourOptions): Promise<TourResult> {
  const env = { ...options.env };
  const tokens = new Tokens();
  const problems: string[] = [];
  const held: Background[] = [];
  const printed: string[] = [];
  for (const step of steps) {
    const line = options.toLocal(step.command);
    let out: string;
    if (line.endsWith(" &")) {
      const b = await background(line.slice(0, -2), env, step.shown.length);
      held.push(b);
      out = b.lines.slice(0, step.shown.length).join("\n");
    } else {
      const variable = ASSIGNMENT.exec(line)?.[1];
      const r = await sh(line, env, variable);
      if (r.code !== 0) throw new Error(`${step.command}\nexited ${r.code}:\n${r.output}`);
      if (variable) {
        if (r.value === "") throw new Error(`${step.command}\nset no ${variable}:\n${r.output}`);
        env[variable] = r.value;
      }
      out = r.output;
    }
    printed.push(out);
    for (const d of differences(step.shown, options.toReadme(out), tokens)) problems.push(`${step.command}\n  ${d}`);
  }
  return { problems, background: held, printed };
}
