/** `berth serve` as a child process, as a user runs it: started, awaited, killed at the end of the file. */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { afterAll } from "vitest";
import { testEnvRoot } from "./env-root.js";

export const ROOT = path.resolve(import.meta.dirname, "../..");
export const BIN = path.join(ROOT, "bin/berth.js");

export interface Spawned {
  readonly child: ChildProcess;
  /** JSON log lines on stdout, as they come. */
  readonly lines: Record<string, unknown>[];
  stderr(): string;
  readonly exited: Promise<number | null>;
}

export interface Served extends Spawned {
  readonly grpc: string;
  readonly http: string;
}

/** Every server spawned, registered at spawn time so that one that never got to serve is killed too. */
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
});

/** Spawns `berth serve` on the embedded database unless env says otherwise, on free ports. */
export function spawnServe(env: Record<string, string>): Spawned {
  const child = spawn(process.execPath, [BIN, "serve"], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: "", NATS_URL: "", BERTH_ADDR: "127.0.0.1:0", BERTH_HTTP_ADDR: "127.0.0.1:0", BERTH_METRICS_ADDR: "127.0.0.1:0", BERTH_LOG_FORMAT: "json", BERTH_ENV_ROOT: testEnvRoot(), ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const lines: Record<string, unknown>[] = [];
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  createInterface({ input: child.stdout }).on("line", (line) => {
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      lines.push({ msg: line });
    }
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, lines, stderr: () => stderr, exited };
}

/** Spawns `berth serve` and resolves once it logs "berth serving"; rejects if it exits first. */
export function serve(env: Record<string, string>): Promise<Served> {
  const s = spawnServe(env);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in time; stderr: ${s.stderr()}`)), 180_000);
    const poll = setInterval(() => {
      const rec = s.lines.find((l) => l.msg === "berth serving");
      if (!rec) return;
      clearInterval(poll);
      clearTimeout(timer);
      resolve({ ...s, grpc: String(rec.grpc), http: String(rec.http) });
    }, 20);
    void s.exited.then((code) => {
      clearInterval(poll);
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before serving; stderr: ${s.stderr()}`));
    });
  });
}
