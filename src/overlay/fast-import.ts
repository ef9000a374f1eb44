/**
 * The stream `git fast-import` reads (git-fast-import(1), "INPUT FORMAT"), written as it is made:
 * one process stores every blob of a commit and builds its trees from the parent's, however many
 * files it holds (issue 30: a process per file cost seconds per thousand). Berth writes the
 * stream itself, so nothing in it comes from anyone else's hand: content travels as counted
 * `data` blocks (never parsed), every path is C-quoted (a newline or a quote in a name cannot end
 * a command), and identities are cut as `git commit-tree` cuts them, so the same inputs give the
 * same commit id whichever of the two wrote it.
 *
 * Small pieces are gathered into writes of up to FLUSH_BYTES; a large file is written as it is.
 */
import type { GitSink } from "../platform/git.js";

export interface Identity {
  readonly name: string;
  readonly email: string;
  /** Seconds since the epoch (UTC). */
  readonly at: number;
}

export type FileMode = "100644" | "100755";

/**
 * How every fast-import here runs: `--done` (a stream cut short commits nothing) and no delta
 * chains (`--depth=0`: deltas against the previous blob cost fast-import more CPU than they
 * save, and every later read of the blob pays for the chain; measured, docs/decisions.md).
 * `git gc` repacks a landing's pack like any other.
 */
export const FAST_IMPORT_ARGS: readonly string[] = ["fast-import", "--quiet", "--done", "--date-format=raw", "--depth=0"];
/** Into a source repository: light compression, what `git add`'s loose objects get; the pack is fsynced as git does by default. */
export const FAST_IMPORT_CONFIG: readonly (readonly [string, string])[] = [["pack.compression", "1"]];
/**
 * Into a scratch repository (a diff's tree, a rebase's merges), removed when the call ends: no
 * compression and no fsync, which only cost time for objects read once and thrown away.
 */
export const SCRATCH_FAST_IMPORT_CONFIG: readonly (readonly [string, string])[] = [["pack.compression", "0"], ["core.fsync", "none"]];

const FLUSH_BYTES = 256 * 1024;
const LF = Buffer.from("\n");

/** A commit's header (git-fast-import(1) "commit"). */
export interface CommitHeader {
  /** The ref fast-import leaves on the commit: in the repository it runs in (one of Berth's own). */
  readonly ref: string;
  readonly author?: Identity;
  readonly committer: Identity;
  readonly message: string;
  /** The parent commit (its full id, or ":<mark>"); none: a root commit. */
  readonly from?: string;
  /** A mark that later commands can name the commit by (":<n>"). */
  readonly mark?: number;
}

export class FastImportStream {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(private readonly sink: GitSink) {}

  async commit(c: CommitHeader): Promise<void> {
    const message = Buffer.from(c.message, "utf8");
    let head = `commit ${c.ref}\n`;
    if (c.mark !== undefined) head += `mark :${c.mark}\n`;
    if (c.author) head += `author ${identLine(c.author)}\n`;
    head += `committer ${identLine(c.committer)}\ndata ${message.byteLength}\n`;
    await this.add(Buffer.from(head, "utf8"), message, LF);
    if (c.from !== undefined) await this.add(Buffer.from(`from ${c.from}\n`, "utf8"));
  }

  /** The path's content, stored as a blob of exactly these bytes (no filter, no end-of-line conversion). */
  async put(mode: FileMode, path: string, content: Uint8Array): Promise<void> {
    await this.add(Buffer.from(`M ${mode} inline `, "utf8"), quotePath(path), Buffer.from(`\ndata ${content.byteLength}\n`, "utf8"), content, LF);
  }

  /** The path set to an object the repository already has (its id). */
  async link(mode: FileMode, path: string, oid: string): Promise<void> {
    await this.add(Buffer.from(`M ${mode} ${oid} `, "utf8"), quotePath(path), LF);
  }

  /** The path removed (nothing when the tree has no such path; a directory with everything below it). */
  async remove(path: string): Promise<void> {
    await this.add(Buffer.from("D ", "utf8"), quotePath(path), LF);
  }

  /**
   * Asks for the commit marked `mark` and its tree (fast-import answers on stdout as it reads:
   * no rev-parse afterwards); `committed` reads the answer.
   */
  async report(mark: number): Promise<void> {
    await this.add(Buffer.from(`\nls :${mark} ""\nget-mark :${mark}\n`, "utf8"));
  }

  /** Ends the stream (`--done`: a stream cut short before this is an error, and nothing is committed). */
  async done(): Promise<void> {
    await this.add(Buffer.from("done\n", "utf8"));
    await this.flush();
  }

  private async add(...pieces: Uint8Array[]): Promise<void> {
    for (const p of pieces) {
      if (p.byteLength >= FLUSH_BYTES) {
        await this.flush();
        await this.sink.write(p);
        continue;
      }
      this.pending.push(Buffer.from(p.buffer, p.byteOffset, p.byteLength));
      this.pendingBytes += p.byteLength;
      if (this.pendingBytes >= FLUSH_BYTES) await this.flush();
    }
  }

  private async flush(): Promise<void> {
    if (this.pendingBytes === 0) return;
    const chunk = Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    await this.sink.write(chunk);
  }
}

/** The answer to `report`: `040000 tree <tree>\t\n<commit>\n` (after any earlier answers). */
export function committed(stdout: Buffer): { commit: string; tree: string } {
  const lines = stdout.toString("utf8").split("\n");
  const [commit = "", tree = ""] = [lines[lines.length - 2] ?? "", (lines[lines.length - 3] ?? "").split("\t")[0]!.split(" ")[2] ?? ""];
  if (!/^[0-9a-f]{40,64}$/.test(commit) || !/^[0-9a-f]{40,64}$/.test(tree)) throw new Error(`fast-import answered ${JSON.stringify(stdout.toString("utf8").slice(-200))}`);
  return { commit, tree };
}

/**
 * A path as fast-import reads it: in double quotes, with `"` and `\` escaped and every control
 * byte as an octal escape; other bytes (UTF-8 included) as they are.
 */
export function quotePath(path: string): Buffer {
  const raw = Buffer.from(path, "utf8");
  const out: number[] = [0x22];
  for (const b of raw) {
    if (b === 0x22 || b === 0x5c) out.push(0x5c, b);
    else if (b < 0x20 || b === 0x7f) out.push(0x5c, ...Buffer.from(b.toString(8).padStart(3, "0"), "ascii"));
    else out.push(b);
  }
  out.push(0x22);
  return Buffer.from(out);
}

/** `Name <email> <seconds> +0000`, the name and e-mail cut as git's ident.c cuts them (below). */
export function identLine(who: Identity): string {
  return `${withoutCrud(who.name)} <${withoutCrud(who.email)}> ${Math.floor(who.at)} +0000`;
}

/** git's ident.c crud(): bytes trimmed from both ends of a name or an e-mail (controls, space, and . , : ; < > " \ '). */
function crud(c: number): boolean {
  return c <= 32 || c === 0x2e || c === 0x2c || c === 0x3a || c === 0x3b || c === 0x3c || c === 0x3e || c === 0x22 || c === 0x5c || c === 0x27;
}

/**
 * Whether git would take `name` as an identity's name: `git commit-tree` refuses one of nothing
 * but crud ("name consists only of disallowed characters"), and a commit written here must be
 * one it would have written.
 */
export function usableIdentName(name: string): boolean {
  return withoutCrud(name) !== "";
}

/**
 * git's strbuf_addstr_without_crud(): crud trimmed from both ends, then every newline, `<` and `>`
 * dropped (they delimit an ident line). `git commit-tree` stores an identity so; a commit written
 * here must be the one it would have written.
 */
export function withoutCrud(s: string): string {
  const b = Buffer.from(s, "utf8");
  let start = 0;
  let end = b.length;
  while (start < end && crud(b[start]!)) start++;
  while (end > start && crud(b[end - 1]!)) end--;
  const kept: number[] = [];
  for (let i = start; i < end; i++) {
    const c = b[i]!;
    if (c !== 0x0a && c !== 0x3c && c !== 0x3e) kept.push(c);
  }
  return Buffer.from(kept).toString("utf8");
}
