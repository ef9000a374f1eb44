/** On-disk fixtures: git repositories for the overlay and turn scenarios, a 4 KiB TypeScript module. */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

/** A committed git repository (branch main) with `files` small TypeScript files over 10×7 directories. */
export function makeGitRepo(files: number, prefix = "berth-bench-src-"): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  const git = (...args: string[]) => execFileSync("git", ["-C", dir, ...args], { stdio: "pipe" });
  git("init", "-q", "-b", "main");
  git("config", "user.email", "bench@example.com");
  git("config", "user.name", "bench");
  for (let i = 0; i < files; i++) {
    const sub = path.join(dir, `pkg${i % 10}`, `mod${i % 7}`);
    mkdirSync(sub, { recursive: true });
    writeFileSync(path.join(sub, `file${i}.ts`), `export const v${i} = ${i};\n`);
  }
  writeFileSync(path.join(dir, "README.md"), "# bench fixture\n");
  git("add", "-A");
  git("commit", "-q", "-m", "fixture");
  return dir;
}

/**
 * A realistic ~4 KiB TypeScript module (imports, an interface, a class with methods, exported
 * functions) in which method `update_<changed>` carries `version`: two versions differ in one
 * function, so a write of one over the other changes (and claims) exactly that symbol.
 */
export function tsModule4KiB(changed: number, version: number): string {
  let s =
    `import { randomUUID } from "node:crypto";\n\n` +
    `export interface Task {\n  id: string;\n  title: string;\n  done: boolean;\n  tags: string[];\n}\n\n` +
    `export class TaskService {\n  private readonly tasks = new Map<string, Task>();\n\n` +
    `  create(title: string): Task {\n    const task = { id: randomUUID(), title, done: false, tags: [] };\n    this.tasks.set(task.id, task);\n    return task;\n  }\n\n`;
  for (let i = 0; s.length < 4096 - 300; i++) {
    s +=
      `  /** Updates the title of a task (variant ${i}). */\n  update_${i}(id: string, title: string): Task | undefined {\n` +
      `    const task = this.tasks.get(id);\n    if (!task) return undefined;\n` +
      `    const next = { ...task, title: title.trim().slice(0, ${i === changed ? 100 + version : 100}) };\n` +
      `    this.tasks.set(id, next);\n    return next;\n  }\n\n`;
  }
  return `${s}}\n\nexport const createTaskService = (): TaskService => new TaskService();\n`;
}
