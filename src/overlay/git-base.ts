/**
 * The base of an overlay: a repository's files at a commit, read with git from its source_path.
 *
 * - Trees: `git ls-tree -r -z --full-tree <commit>`, cached per (repository, commit) as a sorted
 *   path list and path → blob id (LRU of BERTH trees; a commit's tree never changes).
 * - Blobs: one long-lived `git cat-file --batch` process per repository, asked by blob id;
 *   requests are queued (the protocol is sequential), each with a timeout after which the
 *   process is killed and restarted on the next request. Recently read blobs are cached (LRU
 *   by bytes) with their sha256.
 */
import { createHash } from "node:crypto";
import { BerthError } from "../platform/errors.js";
import { execGit, spawnGit } from "../platform/git.js";

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
const TIMEOUT_MS = 10_000;

export function sha256Hex(content: Uint8Array): string {
  return createHash("sha256").update(content).digest("hex");
}


class CatFile {
  private proc: ReturnType<typeof spawnGit> | undefined;
  private buf: Buffer = Buffer.alloc(0);
  private queue: Promise<unknown> = Promise.resolve();
  private waiter: (() => void) | undefined;

  constructor(private readonly repoPath: string) {}

  private start(): ReturnType<typeof spawnGit> {
    const p = spawnGit(this.repoPath, ["cat-file", "--batch"]);
    p.stdout.on("data", (chunk: Buffer) => {
      this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
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
    this.buf = Buffer.alloc(0);
    return p;
  }

  /** The blob's content, or undefined when git says it is missing. */
  read(oid: string): Promise<Uint8Array | undefined> {
    const next = this.queue.then(() => this.readNow(oid));
    this.queue = next.catch(() => undefined); // orders the reads only: the caller gets the failure
    return next;
  }

  private async readNow(oid: string): Promise<Uint8Array | undefined> {
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
    await waitFor(() => this.buf.indexOf(10) >= 0);
    const nl = this.buf.indexOf(10);
    const header = this.buf.subarray(0, nl).toString("utf8");
    if (header.endsWith(" missing")) {
      this.buf = this.buf.subarray(nl + 1);
      return undefined;
    }
    const m = /^[0-9a-f]+ (\S+) (\d+)$/.exec(header);
    if (!m) {
      p.kill();
      this.proc = undefined;
      throw new Error(`git cat-file: unexpected header "${header.slice(0, 100)}"`);
    }
    const size = Number(m[2]);
    await waitFor(() => this.buf.length >= nl + 1 + size + 1);
    const content = new Uint8Array(this.buf.subarray(nl + 1, nl + 1 + size));
    this.buf = this.buf.subarray(nl + 1 + size + 1);
    return m[1] === "blob" ? content : undefined;
  }

  close(): void {
    this.proc?.kill();
    this.proc = undefined;
  }
}

export class GitBase {
  private readonly trees = new Map<string, Promise<BaseTree>>();
  private readonly catFiles = new Map<string, CatFile>();
  private readonly blobs = new Map<string, BaseBlob>();
  private blobBytes = 0;

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
      throw new BerthError("unavailable", "SOURCE_UNREADABLE", "the repository's source could not be read", { source_path: sourcePath, commit });
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

  /** The content of `path` at `commit`; undefined when it does not exist there. */
  async read(sourcePath: string | null, commit: string, path: string): Promise<BaseBlob | undefined> {
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
    if (!cat) this.catFiles.set(sourcePath, (cat = new CatFile(sourcePath)));
    let content: Uint8Array | undefined;
    try {
      content = await cat.read(oid);
    } catch {
      throw new BerthError("unavailable", "SOURCE_UNREADABLE", "the repository's source could not be read", { source_path: sourcePath, commit });
    }
    if (!content) return undefined;
    const blob: BaseBlob = { content, hash: sha256Hex(content) };
    if (content.byteLength <= this.maxFileBytes) {
      this.blobs.set(oid, blob);
      this.blobBytes += content.byteLength;
      while (this.blobBytes > BLOB_CACHE_BYTES) {
        const oldest = this.blobs.entries().next().value!;
        this.blobs.delete(oldest[0]);
        this.blobBytes -= oldest[1].content.byteLength;
      }
    }
    return blob;
  }

  close(): void {
    for (const c of this.catFiles.values()) c.close();
    this.catFiles.clear();
  }
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
