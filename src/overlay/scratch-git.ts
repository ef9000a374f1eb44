/**
 * Git on an overlay without touching the source repository: diffs and rebases build the
 * overlay's tree in a scratch object store of their own (a temporary directory, the source's
 * objects read through GIT_ALTERNATE_OBJECT_DIRECTORIES) with a scratch index, then let git
 * compare trees (`diff-tree`, rename detection and binary detection included) or merge file
 * contents (`merge-file`). Nothing is written into the source repository: a read (DiffWorkspace)
 * leaves no loose objects behind for someone else's `git gc`, and the directory is removed when
 * the call ends. Every git goes through platform/git.ts (its fixed safe configuration).
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { BerthError } from "../platform/errors.js";
import { execGit, execGitCode, type GitScratch } from "../platform/git.js";

const TIMEOUT_MS = 60_000;
const MAX_OUTPUT = 512 * 1024 * 1024;
const ZERO_OID = "0".repeat(40);

/** A path's state in an overlay: content, or null for a deletion. */
export interface TreeChange {
  readonly path: string;
  readonly content: Uint8Array | null;
}

export type DiffKind = "added" | "modified" | "deleted";

export interface DiffStat {
  readonly path: string;
  readonly oldPath: string | undefined;
  readonly change: DiffKind;
  readonly linesAdded: number;
  readonly linesRemoved: number;
  readonly binary: boolean;
}

export interface TreeDiff {
  readonly patch: Uint8Array;
  readonly stats: readonly DiffStat[];
}

/** As git-base.ts answers a source git cannot read; git's own words stay in the server's log (`cause`), not on the wire. */
function unreadable(sourcePath: string, err: unknown): BerthError {
  const e = new BerthError("unavailable", "SOURCE_UNREADABLE", "the repository's source could not be read", { source_path: sourcePath });
  (e as { cause?: unknown }).cause = err;
  return e;
}

export class ScratchRepo {
  private blobs = 0;

  private constructor(
    readonly sourcePath: string,
    private readonly dir: string,
    private readonly scratch: GitScratch,
  ) {}

  /** Runs `work` with a fresh scratch store over `sourcePath`, removed afterwards. */
  static async with<T>(sourcePath: string, work: (s: ScratchRepo) => Promise<T>): Promise<T> {
    let objects: string;
    try {
      objects = (await execGit(sourcePath, ["rev-parse", "--path-format=absolute", "--git-path", "objects"], { timeoutMs: TIMEOUT_MS, maxBuffer: 1 << 20 })).toString("utf8").trim();
    } catch (err) {
      throw unreadable(sourcePath, err);
    }
    const dir = await mkdtemp(path.join(os.tmpdir(), "berth-scratch-"));
    try {
      await mkdir(path.join(dir, "objects"));
      const s = new ScratchRepo(sourcePath, dir, { objectDir: path.join(dir, "objects"), alternates: objects, indexFile: path.join(dir, "index") });
      return await work(s);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  private async git(args: readonly string[], input?: Uint8Array, okCodes?: readonly number[]): Promise<{ stdout: Buffer; code: number }> {
    try {
      return await execGitCode(this.sourcePath, args, { timeoutMs: TIMEOUT_MS, maxBuffer: MAX_OUTPUT, scratch: this.scratch, input, okCodes });
    } catch (err) {
      throw unreadable(this.sourcePath, err);
    }
  }

  /** Writes contents as blobs into the scratch store (verbatim: no clean filter, no line-ending conversion). */
  async writeBlobs(contents: readonly Uint8Array[]): Promise<string[]> {
    if (contents.length === 0) return [];
    const files: string[] = [];
    for (const c of contents) {
      const f = path.join(this.dir, `blob-${this.blobs++}`);
      await writeFile(f, c);
      files.push(f);
    }
    const out = await this.git(["hash-object", "-w", "--no-filters", "--stdin-paths"], Buffer.from(files.join("\n") + "\n"));
    const oids = out.stdout.toString("utf8").trim().split("\n");
    if (oids.length !== contents.length) throw unreadable(this.sourcePath, new Error("git hash-object answered the wrong number of ids"));
    return oids;
  }

  /**
   * The tree of `baseCommit` with `changes` applied (in the scratch store). `executable`: base
   * paths whose mode is 100755 (a rewritten file keeps the bit).
   */
  async treeOf(baseCommit: string, changes: readonly TreeChange[], executable: ReadonlySet<string>): Promise<string> {
    await this.git(["read-tree", baseCommit]);
    const written = changes.filter((c) => c.content !== null);
    const oids = await this.writeBlobs(written.map((c) => c.content!));
    const byPath = new Map(written.map((c, i) => [c.path, oids[i]!]));
    let info = "";
    for (const c of changes) {
      const oid = byPath.get(c.path);
      info += oid ? `${executable.has(c.path) ? "100755" : "100644"} ${oid}\t${c.path}\u0000` : `0 ${ZERO_OID}\t${c.path}\u0000`;
    }
    if (info !== "") await this.git(["update-index", "-z", "--index-info"], Buffer.from(info, "utf8"));
    return (await this.git(["write-tree"])).stdout.toString("utf8").trim();
  }

  /** The diff of two trees: git's patch (renames detected, binary files marked or as binary patches) and a summary per path. */
  async diff(fromTree: string, toTree: string, binary: boolean): Promise<TreeDiff> {
    // Plumbing with every external program off: no diff driver, no textconv (a committed
    // .gitattributes may name either).
    const common = ["diff-tree", "-r", "-M", "--no-ext-diff", "--no-textconv", "--no-color"];
    const [patch, status, numstat] = await Promise.all([
      this.git([...common, "-p", ...(binary ? ["--binary"] : []), fromTree, toTree]),
      this.git([...common, "-z", "--name-status", fromTree, toTree]),
      this.git([...common, "-z", "--numstat", fromTree, toTree]),
    ]);
    const counts = new Map<string, { added: number; removed: number; binary: boolean }>();
    {
      const f = numstat.stdout.toString("utf8").split("\u0000");
      for (let i = 0; i < f.length - 1; ) {
        const [added, removed, p] = f[i]!.split("\t");
        let target = p ?? "";
        i++;
        if (target === "") {
          // A rename: "added\tremoved\t" then the old and the new path.
          target = f[i + 1] ?? "";
          i += 2;
        }
        counts.set(target, { added: added === "-" ? 0 : Number(added), removed: removed === "-" ? 0 : Number(removed), binary: added === "-" });
      }
    }
    const stats: DiffStat[] = [];
    const f = status.stdout.toString("utf8").split("\u0000");
    for (let i = 0; i < f.length - 1; ) {
      const code = f[i]![0];
      let oldPath: string | undefined;
      let p: string;
      if (code === "R" || code === "C") {
        oldPath = f[i + 1]!;
        p = f[i + 2]!;
        i += 3;
      } else {
        p = f[i + 1]!;
        i += 2;
      }
      const n = counts.get(p) ?? { added: 0, removed: 0, binary: false };
      const change: DiffKind = code === "A" || code === "C" ? "added" : code === "D" ? "deleted" : "modified";
      stats.push({ path: p, oldPath: code === "R" ? oldPath : undefined, change, linesAdded: n.added, linesRemoved: n.removed, binary: n.binary });
    }
    stats.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    return { patch: new Uint8Array(patch.stdout), stats };
  }

  /**
   * A three-way merge of one file's contents (`git merge-file -p --diff3`): the merged content
   * and whether it conflicts (the content then holds git's conflict markers). "binary": git
   * refuses to merge binary content.
   */
  async mergeFile(ours: Uint8Array, base: Uint8Array, theirs: Uint8Array, labels: readonly [string, string, string]): Promise<{ content: Uint8Array; conflicts: boolean } | "binary"> {
    const n = this.blobs++;
    const files = ["ours", "base", "theirs"].map((k) => path.join(this.dir, `merge-${n}-${k}`));
    await Promise.all([writeFile(files[0]!, ours), writeFile(files[1]!, base), writeFile(files[2]!, theirs)]);
    let r: { stdout: Buffer; code: number };
    try {
      // Exit code: the number of conflicts (capped at 127); negative (255) on an error such as binary content.
      r = await execGitCode(this.sourcePath, ["merge-file", "-p", "--diff3", "-L", labels[0], "-L", labels[1], "-L", labels[2], ...files], {
        timeoutMs: TIMEOUT_MS,
        maxBuffer: MAX_OUTPUT,
        scratch: this.scratch,
        okCodes: Array.from({ length: 127 }, (_, i) => i + 1),
      });
    } catch (err) {
      if ((err as { code?: unknown }).code === 255) return "binary";
      throw unreadable(this.sourcePath, err);
    }
    return { content: new Uint8Array(r.stdout), conflicts: r.code > 0 };
  }
}
