/**
 * Git on an overlay without touching the source repository: diffs and rebases build the
 * overlay's tree, and a rebase its merges, in a bare repository of Berth's own whose new objects
 * stay in its own store (withScratchStoreOver: the source's objects are read through its
 * alternates), then let git compare trees (`diff-tree`: rename and binary detection are git's)
 * or merge contents (`merge-tree`). Nothing is written into the source repository: a read
 * (DiffWorkspace) leaves no loose objects behind for someone else's `git gc`, and the directory
 * is removed when the call ends. Every git goes through platform/git.ts (its fixed safe
 * configuration), and a call runs a fixed number of them whatever the number of files
 * (issue 30): one fast-import for a tree (it answers the tree's id itself), one diff-tree for a
 * diff, one fast-import, one merge-tree, one ls-tree and one cat-file for any number of merges.
 */
import { randomBytes } from "node:crypto";
import { BerthError } from "../platform/errors.js";
import { withScratchStoreOver, type GitConfig, type GitResult, type GitRunner, type GitRunOptions } from "../platform/git.js";
import { committed, FAST_IMPORT_ARGS, FastImportStream, SCRATCH_FAST_IMPORT_CONFIG, type Identity } from "./fast-import.js";

const TIMEOUT_MS = 60_000;
const MAX_OUTPUT = 512 * 1024 * 1024;
/** The fixed identity and date of the commits built here (only their trees matter). */
const NOBODY: Identity = { name: "Berth", email: "berth@berth.invalid", at: 0 };
/** The ref of the overlay's commit in the scratch repository. */
const OVERLAY_REF = "refs/heads/overlay";

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

/** One file of a batch of three-way merges: the workspace's content, the blobs of the old base (absent: empty) and of the new base. */
export interface MergeJob {
  readonly path: string;
  readonly ours: Uint8Array;
  readonly baseOid: string | undefined;
  readonly theirsOid: string;
}

export interface MergedFile {
  readonly content: Uint8Array;
  readonly conflicts: boolean;
}

/** As git-base.ts answers a source git cannot read; git's own words stay in the server's log (`cause`), not on the wire. */
function unreadable(sourcePath: string, err: unknown): BerthError {
  const e = new BerthError("unavailable", "SOURCE_UNREADABLE", "the repository's source could not be read", { source_path: sourcePath });
  (e as { cause?: unknown }).cause = err;
  return e;
}

export class ScratchRepo {
  private constructor(
    readonly sourcePath: string,
    private readonly run: GitRunner,
  ) {}

  /** Runs `work` with a fresh scratch repository over `sourcePath`, removed afterwards. */
  static async with<T>(sourcePath: string, work: (s: ScratchRepo) => Promise<T>): Promise<T> {
    let started = false;
    try {
      return await withScratchStoreOver(sourcePath, (run) => {
        started = true;
        return work(new ScratchRepo(sourcePath, run));
      });
    } catch (err) {
      // The work's own failures are its caller's; the repository's set-up failing is the source's.
      if (started) throw err;
      throw unreadable(sourcePath, err);
    }
  }

  /** git's answer when it must be one of `ok` (default 0); anything else is the source failing Berth. */
  private async git(args: readonly string[], options: Partial<GitRunOptions> & { ok?: readonly number[] } = {}): Promise<GitResult> {
    const { ok = [0], ...rest } = options;
    let r: GitResult;
    try {
      r = await this.run(args, { timeoutMs: TIMEOUT_MS, maxBuffer: MAX_OUTPUT, ...rest });
    } catch (err) {
      if (rest.feed && !(err as { stderr?: unknown }).stderr) throw err; // the feed's own failure (the overlay's read)
      throw unreadable(this.sourcePath, err);
    }
    if (!ok.includes(r.code)) throw unreadable(this.sourcePath, new Error(`git ${args[0]} exited with ${r.code}: ${r.stderr.trim().split("\n")[0] ?? ""}`));
    return r;
  }

  /**
   * The tree of `baseCommit` with `changes` applied, built by one fast-import (each file stored
   * as it comes: `changes` may stream). Applied in order: deletions first where a file takes a
   * deleted directory's place. `executable`: base paths whose mode is 100755 (a rewritten file
   * keeps the bit).
   */
  async treeOf(baseCommit: string, changes: Iterable<TreeChange> | AsyncIterable<TreeChange>, executable: ReadonlySet<string>): Promise<string> {
    const r = await this.git(FAST_IMPORT_ARGS, {
      config: SCRATCH_FAST_IMPORT_CONFIG,
      feed: async (sink) => {
        const fi = new FastImportStream(sink);
        await fi.commit({ ref: OVERLAY_REF, mark: 1, committer: NOBODY, message: "", from: baseCommit });
        for await (const c of changes) {
          if (c.content === null) await fi.remove(c.path);
          else await fi.put(executable.has(c.path) ? "100755" : "100644", c.path, c.content);
        }
        await fi.report(1);
        await fi.done();
      },
    });
    return this.answered(r).tree;
  }

  /**
   * The diff of two trees, in one diff-tree: git's patch (renames detected, binary files marked
   * or as binary patches) and a summary per path. Its output is the raw records, an empty field,
   * then the patch (exactly what `-p` alone prints), whose lines give the counts (parseDiffTree).
   */
  async diff(fromTree: string, toTree: string, binary: boolean): Promise<TreeDiff> {
    // Plumbing with every external program off: no diff driver, no textconv (a committed
    // .gitattributes may name either; this repository reads none, but the flags say so).
    const out = (await this.git(["diff-tree", "-r", "-M", "--no-ext-diff", "--no-textconv", "--no-color", "--raw", "-z", "-p", ...(binary ? ["--binary"] : []), fromTree, toTree])).stdout;
    return parseDiffTree(out);
  }

  /**
   * Three-way merges of many files at once, as `git merge-file -p --diff3 -L <labels>` of each
   * would give (with git's merge of today: ort, histogram diff): three commits built by one
   * fast-import — the old base's blobs (or an empty one), the workspace's contents and the new
   * base's blobs on the same paths, so the merge base is exact and no rename is ever detected —
   * merged by one `merge-tree --write-tree`, and the results read by one ls-tree and one cat-file.
   * The conflict markers name random refs, replaced by `labels` afterwards. Binary content is
   * the caller's to keep out (git would keep the workspace's side as a conflict).
   */
  async mergeFiles(jobs: readonly MergeJob[], labels: readonly [string, string, string]): Promise<Map<string, MergedFile>> {
    const out = new Map<string, MergedFile>();
    if (jobs.length === 0) return out;
    const token = randomBytes(8).toString("hex");
    const [ours, theirs] = [`ours-${token}`, `theirs-${token}`];
    const empty = new Uint8Array();
    const imported = await this.git(FAST_IMPORT_ARGS, {
      config: SCRATCH_FAST_IMPORT_CONFIG,
      feed: async (sink) => {
        const fi = new FastImportStream(sink);
        await fi.commit({ ref: "refs/heads/base", mark: 1, committer: NOBODY, message: "" });
        for (const j of jobs) {
          if (j.baseOid) await fi.link("100644", j.path, j.baseOid);
          else await fi.put("100644", j.path, empty);
        }
        await fi.commit({ ref: `refs/heads/${ours}`, committer: NOBODY, message: "", from: ":1" });
        for (const j of jobs) await fi.put("100644", j.path, j.ours);
        await fi.commit({ ref: `refs/heads/${theirs}`, committer: NOBODY, message: "", from: ":1" });
        for (const j of jobs) await fi.link("100644", j.path, j.theirsOid);
        await fi.report(1);
        await fi.done();
      },
    });
    const baseCommit = this.answered(imported).commit;
    // diff3 style; the base's label its commit id cut at 40 (core.abbrev): known, so replaceable.
    const config: GitConfig = [["merge.conflictStyle", "diff3"], ["core.abbrev", "40"]];
    const merged = await this.git(["merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", ours, theirs], { ok: [0, 1], config });
    const [tree = "", ...rest] = merged.stdout.toString("utf8").split("\0");
    const conflicted = new Set(merged.code === 1 ? rest.filter((p) => p !== "") : []);
    const listing = (await this.git(["ls-tree", "-r", "-z", "--full-tree", tree])).stdout.toString("utf8");
    const oids = new Map<string, string>();
    for (const entry of listing.split("\0")) {
      const tab = entry.indexOf("\t");
      if (tab > 0) oids.set(entry.slice(tab + 1), entry.slice(0, tab).split(" ")[2]!);
    }
    const wanted = jobs.map((j) => oids.get(j.path));
    if (wanted.some((o) => o === undefined)) throw unreadable(this.sourcePath, new Error("git merge-tree left a merged path out"));
    const contents = await this.blobs(wanted as string[]);
    const relabel: [string, string][] = [
      [`<<<<<<< ${ours}`, `<<<<<<< ${labels[0]}`],
      [`||||||| ${baseCommit.slice(0, 40)}`, `||||||| ${labels[1]}`],
      [`>>>>>>> ${theirs}`, `>>>>>>> ${labels[2]}`],
    ];
    jobs.forEach((j, i) => {
      const conflicts = conflicted.has(j.path);
      out.set(j.path, { content: conflicts ? relabelled(contents[i]!, relabel) : contents[i]!, conflicts });
    });
    return out;
  }

  /** The commit and tree fast-import reported (FastImportStream.report). */
  private answered(r: GitResult): { commit: string; tree: string } {
    try {
      return committed(r.stdout);
    } catch (err) {
      throw unreadable(this.sourcePath, err);
    }
  }

  /** The contents of blobs of this repository, in one `cat-file --batch`. */
  private async blobs(oids: readonly string[]): Promise<Uint8Array[]> {
    const out = (await this.git(["cat-file", "--batch"], { input: Buffer.from(oids.map((o) => `${o}\n`).join(""), "utf8") })).stdout;
    const blobs: Uint8Array[] = [];
    let at = 0;
    for (const oid of oids) {
      const nl = out.indexOf(10, at);
      const [got, type, size] = out.subarray(at, nl).toString("utf8").split(" ");
      if (got !== oid || type !== "blob") throw unreadable(this.sourcePath, new Error(`git cat-file answered ${got} ${type} for ${oid}`));
      const start = nl + 1;
      blobs.push(new Uint8Array(out.subarray(start, start + Number(size))));
      at = start + Number(size) + 1;
    }
    return blobs;
  }
}

/** Every marker line `from` (a whole line) replaced by `to`: byte by byte, whatever the file's encoding. */
function relabelled(content: Uint8Array, pairs: readonly [string, string][]): Uint8Array {
  let b = Buffer.from(content.buffer, content.byteOffset, content.byteLength);
  for (const [from, to] of pairs) {
    const needle = Buffer.from(`${from}\n`, "utf8");
    const replacement = Buffer.from(`${to}\n`, "utf8");
    const parts: Buffer[] = [];
    let at = 0;
    for (let i = b.indexOf(needle); i >= 0; i = b.indexOf(needle, i + 1)) {
      if (i > 0 && b[i - 1] !== 10) continue; // not at a line's start
      parts.push(b.subarray(at, i), replacement);
      at = i + needle.length;
    }
    if (parts.length > 0) b = Buffer.concat([...parts, b.subarray(at)]);
  }
  return new Uint8Array(b);
}

/**
 * diff-tree's `--raw -z -p` output, taken apart (see ScratchRepo.diff): the raw records (status,
 * paths), an empty field, then the patch, whose sections (one per record, in the same order)
 * give each path's line counts: the `+` and `-` lines after its first hunk header, which is what
 * `--numstat` would count by running the same diff a second time. A section without hunks but
 * with "Binary files" or "GIT binary patch" is a binary file.
 */
export function parseDiffTree(out: Buffer): TreeDiff {
  const stats: DiffStat[] = [];
  if (out.length === 0) return { patch: new Uint8Array(), stats };
  const raw: { code: string; path: string; oldPath: string | undefined }[] = [];
  let at = 0;
  const field = () => {
    const end = out.indexOf(0, at);
    if (end < 0) throw new Error("diff-tree output ends inside a record");
    const f = out.subarray(at, end).toString("utf8");
    at = end + 1;
    return f;
  };
  // Raw records: ":<modes> <oids> <status>" then the path (a rename or copy: old and new path).
  while (at < out.length && out[at] === 0x3a) {
    const code = field().split(" ")[4]![0]!;
    if (code === "R" || code === "C") {
      const oldPath = field();
      raw.push({ code, oldPath, path: field() });
    } else raw.push({ code, path: field(), oldPath: undefined });
  }
  if (field() !== "") throw new Error("diff-tree output: no patch after the records");
  const patch = out.subarray(at);
  const counts = patchCounts(patch);
  if (counts.length !== raw.length) throw new Error(`diff-tree output: ${raw.length} records but ${counts.length} patch sections`);
  raw.forEach((r, i) => {
    const n = counts[i]!;
    const change: DiffKind = r.code === "A" || r.code === "C" ? "added" : r.code === "D" ? "deleted" : "modified";
    stats.push({ path: r.path, oldPath: r.code === "R" ? r.oldPath : undefined, change, linesAdded: n.added, linesRemoved: n.removed, binary: n.binary });
  });
  stats.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { patch: new Uint8Array(patch), stats };
}

const SECTION = Buffer.from("diff --git ");
const BINARY_NOTES = [Buffer.from("Binary files "), Buffer.from("GIT binary patch")];

/** Per section of a patch (each starts with a `diff --git ` line): its added and removed lines, and whether it is binary. */
function patchCounts(patch: Buffer): { added: number; removed: number; binary: boolean }[] {
  const out: { added: number; removed: number; binary: boolean }[] = [];
  let cur: { added: number; removed: number; binary: boolean } | undefined;
  let inHunks = false;
  for (let at = 0; at < patch.length; ) {
    let end = patch.indexOf(10, at);
    if (end < 0) end = patch.length;
    const first = patch[at];
    // A hunk's lines start with " ", "+", "-" or "\", a binary patch's with a letter and hold no space: "diff --git " starts a section.
    if (first === 0x64 && patch.subarray(at, at + SECTION.length).equals(SECTION)) {
      cur = { added: 0, removed: 0, binary: false };
      out.push(cur);
      inHunks = false;
    } else if (cur && !inHunks) {
      if (first === 0x40 && patch[at + 1] === 0x40) inHunks = true;
      else if (BINARY_NOTES.some((n) => patch.subarray(at, at + n.length).equals(n))) cur.binary = true;
    } else if (cur) {
      if (first === 0x2b) cur.added++;
      else if (first === 0x2d) cur.removed++;
    }
    at = end + 1;
  }
  return out;
}
