/**
 * The path rules (src/overlay/paths.ts), link-proof file access (src/turns/safe-fs.ts) and the
 * one way git is run (src/platform/git.ts), on their own; the end-to-end cases are in
 * test/turns/fs-safety.test.ts.
 */
import { execFileSync } from "node:child_process";
import { existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isGitName, normalisePath, symlinkOnPath } from "../../src/overlay/paths.js";
import { gitArgs, gitEnv } from "../../src/platform/git.js";
import { readInside, removeInside, rootOf, UnsafePath, writeInside } from "../../src/turns/safe-fs.js";

describe("isGitName", () => {
  it.each([".git", ".GIT", ".Git", ".git.", ".git ", ".git. . ", ".g\u200cit", "\ufeff.git", "git~1", "GIT~1"])("%j is .git", (n) => expect(isGitName(n)).toBe(true));
  it.each([".github", ".gitignore", ".gitkeep", "git", "x.git", ".git-x", "git~2", ".gitx."])("%j is not", (n) => expect(isGitName(n)).toBe(false));
  it("refuses it as any component of an overlay path", () => {
    for (const p of ["src/.git/config", ".GIT/config", "a/.Git/hooks/x", "a/b/.git"]) expect(normalisePath("path", p)).toMatchObject({ ok: false, violation: { field: "path", reason: "GIT_DIRECTORY" } });
  });
});

describe("symlinkOnPath", () => {
  const links = new Set(["escape", "a/b/link"]);
  it("finds a link among the parents (not the path itself), unless the workspace deleted it", () => {
    expect(symlinkOnPath("escape/x", links)).toBe("escape");
    expect(symlinkOnPath("a/b/link/c/d", links)).toBe("a/b/link");
    expect(symlinkOnPath("escape", links)).toBeUndefined();
    expect(symlinkOnPath("escape/x", links, (l) => l === "escape")).toBeUndefined();
    expect(symlinkOnPath("escaped/x", links)).toBeUndefined();
    expect(symlinkOnPath("a/b/linked/x", links)).toBeUndefined();
  });
});

describe("safe-fs", () => {
  let base: string;
  let dir: string;
  let outside: string;
  beforeEach(() => {
    base = mkdtempSync(path.join(tmpdir(), "berth-safefs-"));
    dir = path.join(base, "env");
    outside = path.join(base, "outside");
    mkdirSync(dir);
    mkdirSync(outside);
    writeFileSync(path.join(outside, "secret.txt"), "secret\n");
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  it("never writes through a link in a parent, however deep", async () => {
    symlinkSync(outside, path.join(dir, "out"));
    mkdirSync(path.join(dir, "a"));
    symlinkSync(outside, path.join(dir, "a", "out"));
    const root = await rootOf(dir);
    for (const rel of ["out/x.txt", "out/secret.txt", "a/out/deep/x.txt"]) {
      await expect(writeInside(root, rel, Buffer.from("owned"))).rejects.toMatchObject({ reason: "SYMLINK_IN_PATH" });
    }
    expect(readdirSync(outside)).toEqual(["secret.txt"]);
    expect(readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe("secret\n");
  });

  it("replaces a link at the path itself by the file, leaving its target alone", async () => {
    symlinkSync(path.join(outside, "secret.txt"), path.join(dir, "f.txt"));
    const st = await writeInside(await rootOf(dir), "f.txt", Buffer.from("mine"));
    expect(st.isFile()).toBe(true);
    expect(readFileSync(path.join(dir, "f.txt"), "utf8")).toBe("mine");
    expect(readFileSync(path.join(outside, "secret.txt"), "utf8")).toBe("secret\n");
  });

  it("creates missing parents and refuses a file where a directory should be", async () => {
    const root = await rootOf(dir);
    await writeInside(root, "n/e/w.txt", Buffer.from("w"));
    expect(readFileSync(path.join(dir, "n/e/w.txt"), "utf8")).toBe("w");
    await expect(writeInside(root, "n/e/w.txt/x", Buffer.from("x"))).rejects.toBeInstanceOf(UnsafePath);
    await expect(writeInside(root, "n/../../x", Buffer.from("x"))).rejects.toMatchObject({ reason: "INVALID_PATH" });
  });

  it("a private root checks a parent once, and again after it was removed", async () => {
    const root = await rootOf(dir, { private: true });
    await writeInside(root, "d/a.txt", Buffer.from("a"));
    await removeInside(root, "d", (abs) => rm(abs, { recursive: true, force: true }));
    await writeInside(root, "d/b.txt", Buffer.from("b"));
    expect(readdirSync(path.join(dir, "d"))).toEqual(["b.txt"]);
  });

  it("reads only regular files reached without a link: not a link, not through one, not a FIFO", async () => {
    writeFileSync(path.join(dir, "real.txt"), "real");
    symlinkSync(path.join(outside, "secret.txt"), path.join(dir, "peek.txt"));
    symlinkSync(outside, path.join(dir, "out"));
    execFileSync("mkfifo", [path.join(dir, "fifo")]);
    const root = await rootOf(dir);
    expect((await readInside(root, "real.txt", 100))?.content?.toString()).toBe("real");
    expect(await readInside(root, "peek.txt", 100)).toBeUndefined();
    expect(await readInside(root, "out/secret.txt", 100)).toBeUndefined();
    expect(await readInside(root, "fifo", 100)).toBeUndefined();
    expect(await readInside(root, "missing/x", 100)).toBeUndefined();
  });

  it("reads at most the bound it is given, and nothing of a file its check refuses", async () => {
    writeFileSync(path.join(dir, "ten.txt"), "0123456789");
    const root = await rootOf(dir);
    expect((await readInside(root, "ten.txt", 10))?.content?.toString()).toBe("0123456789");
    const over = await readInside(root, "ten.txt", 9);
    expect(over?.tooLarge).toBe(true);
    expect(over?.content).toBeUndefined();
    expect(await readInside(root, "ten.txt", 100, (st) => st.nlink === 1)).toBeDefined();
    linkSync(path.join(dir, "ten.txt"), path.join(dir, "ten-again.txt"));
    expect(await readInside(root, "ten.txt", 100, (st) => st.nlink === 1)).toBeUndefined();
  });
});

describe("git's safe config", () => {
  it("drops every inherited GIT_* variable and ignores system and global config", () => {
    const e = gitEnv();
    expect(Object.keys(e).filter((k) => k.startsWith("GIT_")).sort()).toEqual(["GIT_ATTR_NOSYSTEM", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "GIT_OPTIONAL_LOCKS", "GIT_PAGER", "GIT_TERMINAL_PROMPT"]);
    expect(e).toMatchObject({ GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" });
    expect(gitArgs("/r", ["status"])).toEqual(expect.arrayContaining(["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-C", "/r", "status"]));
  });

  /** The modules that start programs other than git (eslint.config.js allows the same, each with its reason). */
  const CHILD_PROCESS_ALLOWED = new Set(["turns/environment.ts", "cli/run-process.ts", "platform/sandbox.ts"]);
  it("is the only way src/ runs git: no other module imports child_process (but environment.ts, for tar and rm, cli/run-process.ts, berth run's agent, and platform/sandbox.ts, bwrap for berth run and checks) or names the git binary", () => {
    const src = path.join(import.meta.dirname, "../../src");
    const offenders: string[] = [];
    const walk = (d: string): void => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (/\.(ts|mts|cts|js|mjs|cjs)$/.test(e.name)) {
          const rel = path.relative(src, p).split(path.sep).join("/");
          if (rel === "platform/git.ts") continue;
          const text = readFileSync(p, "utf8");
          if (/from\s+["'](node:)?child_process["']|require\(["'](node:)?child_process["']\)/.test(text) && !CHILD_PROCESS_ALLOWED.has(rel)) offenders.push(`${rel}: imports child_process`);
          if (/\(\s*(["'`])([^"'`\s]*\/)?git\1\s*[,)]/.test(text)) offenders.push(`${rel}: calls something with "git" as the program`);
        }
      }
    };
    walk(src);
    expect(existsSync(path.join(src, "platform/git.ts"))).toBe(true);
    expect(offenders).toEqual([]);
  });
});
