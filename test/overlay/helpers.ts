/** Shared set-up of the overlay tests: a real git repository with TypeScript and Python files. */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import type { Db } from "../../src/platform/database.js";

export const NAMES = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"] as const;

/** A TypeScript module with one function per name, each returning its index. */
export function tsModule(values: Partial<Record<(typeof NAMES)[number], number>> = {}): string {
  return NAMES.map((n, i) => `export function ${n}(): number {\n  return ${values[n] ?? i};\n}\n`).join("\n");
}

export const PY = `class TaskService:\n    def create_task(self, name):\n        return name\n\n    def delete_task(self, name):\n        return None\n\n\ndef helper():\n    return 1\n`;

export function gitRepo(): { dir: string; head: string } {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-overlay-"));
  const git = (...args: string[]) => execFileSync("git", ["-C", dir, ...args], { encoding: "utf8" }).trim();
  git("init", "-q", "-b", "main");
  mkdirSync(path.join(dir, "src"), { recursive: true });
  mkdirSync(path.join(dir, "py"), { recursive: true });
  writeFileSync(path.join(dir, "src", "util.ts"), tsModule());
  writeFileSync(path.join(dir, "py", "tasks.py"), PY);
  writeFileSync(path.join(dir, "README.md"), "# demo\n");
  for (let i = 0; i < 25; i++) writeFileSync(path.join(dir, "src", `f${String(i).padStart(2, "0")}.txt`), `file ${i}\n`);
  git("add", "-A");
  git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "base");
  return { dir, head: git("rev-parse", "HEAD") };
}

export const utf8 = (s: string) => new TextEncoder().encode(s);
export const text = (b: Uint8Array) => new TextDecoder().decode(b);

export async function claimsOf(db: Db, workspaceId: string): Promise<{ path: string; symbol: string }[]> {
  const r = await sql<{ path: string; symbol: string }>`SELECT path, symbol FROM claims WHERE workspace_id = ${workspaceId}::uuid ORDER BY path, symbol`.execute(db);
  return r.rows;
}

export async function overlayRows(db: Db, workspaceId: string): Promise<{ path: string; change: string }[]> {
  const r = await sql<{ path: string; change: string }>`SELECT path, change FROM overlay_files WHERE workspace_id = ${workspaceId}::uuid ORDER BY path`.execute(db);
  return r.rows;
}

export async function eventKinds(db: Db, workspaceId: string): Promise<string[]> {
  const r = await sql<{ kind: string }>`SELECT kind FROM events WHERE workspace_id = ${workspaceId}::uuid ORDER BY staged`.execute(db);
  return r.rows.map((x) => x.kind);
}
