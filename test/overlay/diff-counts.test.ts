/**
 * DiffWorkspace's line counts come from the patch itself (one diff-tree, issue 30): for every kind
 * of change they must be what `git diff-tree --numstat` says for the same trees. Real git, a
 * repository made here.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseDiffTree } from "../../src/overlay/scratch-git.js";

function repoWithTwoCommits(): { git: (...args: string[]) => Buffer; dir: string } {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-diff-counts-"));
  const git = (...args: string[]) => execFileSync("git", ["-C", dir, "-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null" }, maxBuffer: 1 << 26 });
  const put = (p: string, content: string | Uint8Array) => {
    mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
    writeFileSync(path.join(dir, p), content);
  };
  git("init", "-q", "-b", "main");
  const long = Array.from({ length: 40 }, (_, i) => `line ${i}\n`).join("");
  put("modified.txt", long);
  put("no-newline.txt", "a\nb");
  put("renamed-from.txt", long + "tail\n");
  put("deleted.txt", "gone\n--- not a header\n+++ nor this\n");
  put("binary.bin", new Uint8Array([0, 1, 2, 3]));
  put("mode.sh", "#!/bin/sh\n");
  put("empty-deleted.txt", "");
  git("add", "-A");
  git("commit", "-q", "-m", "one");
  put("modified.txt", long.replace("line 3\n", "line three\n").replace("line 30\n", "") + "added at the end\n");
  put("no-newline.txt", "a\nb\nc");
  unlinkSync(path.join(dir, "renamed-from.txt"));
  put("renamed/to.txt", long + "tail changed\n");
  unlinkSync(path.join(dir, "deleted.txt"));
  put("binary.bin", new Uint8Array([0, 9, 2, 3, 4]));
  chmodSync(path.join(dir, "mode.sh"), 0o755);
  unlinkSync(path.join(dir, "empty-deleted.txt"));
  put("added.patch", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n");
  put("added-empty.txt", "");
  put("dir with space/\"quoted\".txt", "q\n");
  git("add", "-A");
  git("commit", "-q", "-m", "two");
  return { git, dir };
}

describe("the line counts of a diff", () => {
  for (const binary of [false, true]) {
    it(`are git's --numstat for modified, added, deleted, renamed, mode-only, binary and no-newline files${binary ? " (binary patches)" : ""}`, () => {
      const { git, dir } = repoWithTwoCommits();
      try {
        const common = ["diff-tree", "-r", "-M", "--no-ext-diff", "--no-textconv", "--no-color"];
        const d = parseDiffTree(git(...common, "--raw", "-z", "-p", ...(binary ? ["--binary"] : []), "HEAD~", "HEAD"));
        const numstat = new Map<string, [number, number, boolean]>();
        const f = git(...common, "--numstat", "-z", "HEAD~", "HEAD").toString("utf8").split("\0");
        for (let i = 0; i < f.length - 1; i++) {
          const [added, removed, p] = f[i]!.split("\t") as [string, string, string];
          const target = p === "" ? ((i += 2), f[i]!) : p;
          numstat.set(target, [added === "-" ? 0 : Number(added), removed === "-" ? 0 : Number(removed), added === "-"]);
        }
        expect(d.stats.map((s) => s.path).sort()).toEqual([...numstat.keys()].sort());
        for (const s of d.stats) expect([s.path, s.linesAdded, s.linesRemoved, s.binary]).toEqual([s.path, ...numstat.get(s.path)!]);
        expect(d.stats.find((s) => s.path === "renamed/to.txt")).toMatchObject({ oldPath: "renamed-from.txt", change: "modified" });
        expect(Buffer.from(d.patch).equals(git(...common, "-p", ...(binary ? ["--binary"] : []), "HEAD~", "HEAD"))).toBe(true);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
