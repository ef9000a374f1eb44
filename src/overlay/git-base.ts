/**
 * The base of an overlay: a repository's files at a commit, read with git from its source_path.
 *
 * - Trees: `git ls-tree -r -z --full-tree <commit>`, cached per (repository, commit) as a sorted
 *   path list and path → blob id (LRU of BERTH trees; a commit's tree never changes).
 * - Blobs: asked by blob id, their size first (one long-lived `git cat-file --batch-check` per
 *   repository: a header, never a body, so no read waits behind another's bytes). A blob over
 *   the caller's bound is refused (FILE_TOO_LARGE) without being read. A small blob comes from
 *   one long-lived `git cat-file --batch` per repository (requests queued: the protocol is
 *   sequential; each with a timeout after which the process is killed and restarted on the
 *   next request); a large one from a `git cat-file blob` of its own, at most LARGE_READS at a
 *   time, into a buffer of the announced size and hashed as it streams, with a timeout that
 *   grows with the size: one large read neither holds the queue other sessions' reads wait in
 *   nor runs into the small reads' timeout. Recently read blobs up to CACHED_BLOB_BYTES are
 *   cached (LRU by bytes) with their sha256.
 */
import { createHash } from "node:crypto";
import { BerthError } from "../platform/errors.js";
import { execGit, spawnGit } from "../platform/git.js";
import { fileTooLarge } from "./refusals.js";

export interface BaseTree {
  /** Sorted (by UTF-16 code units, as ListFiles orders). */
  readonly paths: readonly string[];
  readonly blobs: ReadonlyMap<string, string>;
  /** The paths that are symbolic links (mode 120000; their blob is the link's target). */
  readonly symlinks: ReadonlySet<string>;
  /** The paths with mode 100755 (a diff or rebase keeps the bit on the files it rewrites). */
  readonly executables: ReadonlySet<string>;
}

export interface BaseBlob {
  readonly content: Uint8Array;
  readonly hash: string;
}

const EMPTY_TREE: BaseTree = { paths: [], blobs: new Map(), symlinks: new Set(), executables: new Set() };
const TREE_CACHE = 32;
const BLOB_CACHE_BYTES = 64 * 1024 * 1024;
/** The largest blob the LRU keeps: a larger one would push out most of the rest at once. */
const CACHED_BLOB_BYTES = BLOB_CACHE_BYTES / 8;
/** Blobs up to this size come through the shared `--batch` queue; larger ones through a process of their own. */
export const SMALL_BLOB_BYTES = 1024 * 1024;
/** Large reads in flight per server: each holds its blob's size in memory. */
const LARGE_READS = 2;
const TIMEOUT_MS = 10_000;
/** A large read's timeout grows by this much per MiB (git streams hundreds of MiB a second: a hang guard only). */
const LARGE_MS_PER_MIB = 250;

export function sha256Hex(content: Uint8Array): string {
  return createHash("sha256").update(content).digest("hex");
}

/**
 * The unread bytes of a pipe, as the chunks that came: a blob spread over thousands of chunks
 * is copied once, when taken, not once per chunk.
 */
class ByteQueue {
  private chunks: Buffer[] = [];
  private bytes = 0;

  get length(): number {
    return this.bytes;
  }

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
  }

  /** The offset of the first newline, or -1. */
  newline(): number {
    let off = 0;
    for (const c of this.chunks) {
      const i = c.indexOf(10);
      if (i >= 0) return off + i;
      off += c.length;
    }
    return -1;
  }

  /** The first `n` bytes (n <= length), removed; a copy of their own (a cached blob must not pin a whole chunk). */
  take(n: number): Buffer {
    const out = Buffer.allocUnsafe(n);
    let off = 0;
    for (const c of this.chunks) {
      if (off === n) break;
      off += c.copy(out, off, 0, Math.min(c.length, n - off));
    }
    this.drop(n);
    return out;
  }

  private drop(n: number): void {
    this.bytes -= n;
    while (n > 0) {
      const c = this.chunks[0]!;
      if (c.length <= n) {
        this.chunks.shift();
        n -= c.length;
      } else {
        this.chunks[0] = c.subarray(n);
        n = 0;
      }
    }
  }
}

interface BlobInfo {
  readonly type: string;
  readonly size: number;
}

/**
 * One long-lived `git cat-file --batch` or `--batch-check`: requests queued (the protocol is
 * sequential), each with a timeout after which the process is killed (restarted by the next).
 */
class CatFile {
  private proc: ReturnType<typeof spawnGit> | undefined;
  private buf = new ByteQueue();
  private queue: Promise<unknown> = Promise.resolve();
  private waiter: (() => void) | undefined;

  constructor(
    private readonly repoPath: string,
    private readonly mode: "--batch" | "--batch-check",
  ) {}

  private start(): ReturnType<typeof spawnGit> {
    const p = spawnGit(this.repoPath, ["cat-file", this.mode]);
    p.stdout.on("data", (chunk: Buffer) => {
      if (this.proc !== p) return; // a killed process's last bytes belong to no request
      this.buf.push(chunk);
      this.waiter?.();
    });
    p.stderr.resume();
    p.on("exit", () => {
      if (this.proc === p) this.proc = undefined;
      this.waiter?.();
    });
    p.on("error", () => {
      if (this.proc === p) this.proc = undefined;
      this.waiter?.();
    });
    p.stdin.on("error", () => {}); // EPIPE when git has died: the exit/error handlers above wake the reader
    this.proc = p;
    this.buf = new ByteQueue();
    return p;
  }

  /** The object's type and size, and with --batch its content (a blob's only); undefined when git says it is missing. */
  ask(oid: string): Promise<{ info: BlobInfo; content?: Buffer } | undefined> {
    const next = this.queue.then(() => this.askNow(oid));
    this.queue = next.catch(() => undefined); // orders the requests only: the caller gets the failure
    return next;
  }

  private async askNow(oid: string): Promise<{ info: BlobInfo; content?: Buffer } | undefined> {
    const p = this.proc ?? this.start();
    const deadline = Date.now() + TIMEOUT_MS;
    p.stdin.write(`${oid}\n`);
    const waitFor = async (pred: () => boolean) => {
      while (!pred()) {
        if (this.proc !== p) throw new Error("git cat-file exited");
        const left = deadline - Date.now();
        if (left <= 0) {
          p.kill();
          this.proc = undefined;
          throw new Error("git cat-file timed out");
        }
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, left);
          this.waiter = () => {
            clearTimeout(t);
            resolve();
          };
        });
        this.waiter = undefined;
      }
    };
    await waitFor(() => this.buf.newline() >= 0);
    const header = this.buf.take(this.buf.newline() + 1).toString("utf8", 0);
    const line = header.slice(0, -1);
    if (line.endsWith(" missing")) return undefined;
    const m = /^[0-9a-f]+ (\S+) (\d+)$/.exec(line);
    if (!m) {
      p.kill();
      this.proc = undefined;
      throw new Error(`git cat-file: unexpected header "${line.slice(0, 100)}"`);
    }
    const info: BlobInfo = { type: m[1]!, size: Number(m[2]) };
    if (this.mode === "--batch-check") return { info };
    await waitFor(() => this.buf.length >= info.size + 1);
    const content = this.buf.take(info.size);
    this.buf.take(1);
    return info.type === "blob" ? { info, content } : { info };
  }

  close(): void {
    this.proc?.kill();
    this.proc = undefined;
  }
}

/** A blob of `size` bytes read by a `git cat-file blob` of its own: one buffer of that size, hashed as it streams. */
function readLarge(repoPath: string, oid: string, size: number): Promise<BaseBlob> {
  return new Promise((resolve, reject) => {
    const p = spawnGit(repoPath, ["cat-file", "blob", oid]);
    p.stdin.end();
    const content = Buffer.allocUnsafe(size);
    const hash = createHash("sha256");
    let off = 0;
    let failure: Error | undefined;
    const fail = (err: Error) => {
      failure ??= err;
      p.kill();
    };
    const timer = setTimeout(() => fail(new Error("git cat-file blob timed out")), TIMEOUT_MS + Math.ceil((size / (1024 * 1024)) * LARGE_MS_PER_MIB));
    p.stdout.on("data", (chunk: Buffer) => {
      if (failure) return;
      if (off + chunk.length > size) return fail(new Error(`git cat-file blob ${oid}: more than the ${size} bytes announced`));
      chunk.copy(content, off);
      hash.update(chunk);
      off += chunk.length;
    });
    p.stderr.resume();
    p.on("error", fail);
    p.on("close", (code) => {
      clearTimeout(timer);
      if (!failure && code !== 0) failure = new Error(`git cat-file blob ${oid} exited with ${code}`);
      if (!failure && off !== size) failure = new Error(`git cat-file blob ${oid}: ${off} of the ${size} bytes announced`);
      if (failure) reject(failure);
      else resolve({ content, hash: hash.digest("hex") });
    });
  });
}

/** At most `n` holders at a time; the others wait in order. */
class Permits {
  private readonly waiting: (() => void)[] = [];

  constructor(private free: number) {}

  async with<T>(fn: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    }
  }
}

/** The two long-lived processes of a repository. */
interface CatFiles {
  readonly check: CatFile;
  readonly batch: CatFile;
}

export class GitBase {
  private readonly trees = new Map<string, Promise<BaseTree>>();
  private readonly catFiles = new Map<string, CatFiles>();
  private readonly blobs = new Map<string, BaseBlob>();
  private blobBytes = 0;
  private readonly large = new Permits(LARGE_READS);

  constructor(private readonly maxFileBytes: number) {}

  /** The tree of `commit` (empty without a source path). */
  tree(sourcePath: string | null, commit: string): Promise<BaseTree> {
    if (!sourcePath) return Promise.resolve(EMPTY_TREE);
    const key = `${sourcePath}\u0000${commit}`;
    const hit = this.trees.get(key);
    if (hit) {
      this.trees.delete(key);
      this.trees.set(key, hit);
      return hit;
    }
    const p = this.listTree(sourcePath, commit);
    this.trees.set(key, p);
    p.catch(() => this.trees.delete(key)); // un-caches a failure; the caller gets the rejection
    if (this.trees.size > TREE_CACHE) this.trees.delete(this.trees.keys().next().value!);
    return p;
  }

  private async listTree(sourcePath: string, commit: string): Promise<BaseTree> {
    let stdout: Buffer;
    try {
      stdout = await execGit(sourcePath, ["ls-tree", "-r", "-z", "--full-tree", commit], { timeoutMs: 30_000, maxBuffer: 512 * 1024 * 1024 });
    } catch {
      throw unreadable(sourcePath, commit);
    }
    const blobs = new Map<string, string>();
    const symlinks = new Set<string>();
    const executables = new Set<string>();
    for (const rec of stdout.toString("utf8").split("\u0000")) {
      if (rec === "") continue;
      const tab = rec.indexOf("\t");
      const [mode, type, oid] = rec.slice(0, tab).split(" ");
      if (type === "blob" && oid) blobs.set(rec.slice(tab + 1), oid);
      if (type === "blob" && mode === "120000") symlinks.add(rec.slice(tab + 1));
      if (type === "blob" && mode === "100755") executables.add(rec.slice(tab + 1));
    }
    const paths = [...blobs.keys()].sort(comparePaths);
    return { paths, blobs, symlinks, executables };
  }

  /**
   * The content of `path` at `commit`; undefined when it does not exist there. With `bounded`,
   * a file over BERTH_MAX_FILE_BYTES is refused (FILE_TOO_LARGE) before any of it is read:
   * what is answered to an agent is bounded as what it may write is. Without, the whole file
   * (a write or rebase over a large base file still needs it; its memory is its size, once).
   */
  async read(sourcePath: string | null, commit: string, path: string, options: { bounded?: boolean } = {}): Promise<BaseBlob | undefined> {
    if (!sourcePath) return undefined;
    const tree = await this.tree(sourcePath, commit);
    const oid = tree.blobs.get(path);
    if (!oid) return undefined;
    const cached = this.blobs.get(oid);
    if (cached) {
      this.blobs.delete(oid);
      this.blobs.set(oid, cached);
      return cached;
    }
    let cat = this.catFiles.get(sourcePath);
    if (!cat) this.catFiles.set(sourcePath, (cat = { check: new CatFile(sourcePath, "--batch-check"), batch: new CatFile(sourcePath, "--batch") }));
    let info: BlobInfo | undefined;
    try {
      info = (await cat.check.ask(oid))?.info;
    } catch {
      throw unreadable(sourcePath, commit);
    }
    if (info?.type !== "blob") return undefined;
    if (options.bounded && info.size > this.maxFileBytes) throw fileTooLarge(path, info.size, this.maxFileBytes);
    let blob: BaseBlob | undefined;
    try {
      if (info.size <= SMALL_BLOB_BYTES) {
        const content = (await cat.batch.ask(oid))?.content;
        blob = content && { content, hash: sha256Hex(content) };
      } else {
        const size = info.size;
        blob = await this.large.with(() => readLarge(sourcePath, oid, size));
      }
    } catch {
      throw unreadable(sourcePath, commit);
    }
    if (!blob) return undefined;
    if (blob.content.byteLength <= CACHED_BLOB_BYTES) {
      this.blobs.set(oid, blob);
      this.blobBytes += blob.content.byteLength;
      while (this.blobBytes > BLOB_CACHE_BYTES) {
        const oldest = this.blobs.entries().next().value!;
        this.blobs.delete(oldest[0]);
        this.blobBytes -= oldest[1].content.byteLength;
      }
    }
    return blob;
  }

  close(): void {
    for (const c of this.catFiles.values()) {
      c.check.close();
      c.batch.close();
    }
    this.catFiles.clear();
  }
}

function unreadable(sourcePath: string, commit: string): BerthError {
  return new BerthError("unavailable", "SOURCE_UNREADABLE", "the repository's source could not be read", { source_path: sourcePath, commit });
}

/** Path order of ListFiles: plain code-unit order (stable, and what page tokens compare with). */
export function comparePaths(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The first index of `sorted` (in comparePaths order) whose path is not before `key`. */
export function lowerBound(sorted: readonly string[], key: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
