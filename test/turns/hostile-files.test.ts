/**
 * Issue 26 items 7 and 8, through a real server: no file an agent can make in its environment —
 * a FIFO (a `.gitignore` one included, at the top and in a new directory), a unix socket, a
 * device node, a symlink, a hardlink to a file outside, a huge sparse `.gitignore`, dozens of
 * sparse 8 MiB files — hangs EndTurn, is read through, or costs the server memory in proportion
 * to the whole. The server runs in this process, so its memory is this process's.
 */
import { execFileSync } from "node:child_process";
import { existsSync, linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TurnOutcome } from "../../gen/berth/v1/types_pb.js";
import type { OverlayPort } from "../../src/overlay/overlay-port.js";
import { failure } from "../support/rpc-error.js";
import { makeGitRepo, newSession, startTurnBerth, type TurnBerth } from "./helpers.js";

const MiB = 1024 * 1024;

/**
 * The deadline that tells a hang from slow work. Capture's own guards (git's time-out, the walk
 * that opens only regular files) answer in seconds; what a FIFO did before them was never answer.
 */
const HANG_MS = 120_000;

/** A device node, when this process may make one (mknod needs root): its path, else undefined. */
function tryMknod(file: string): string | undefined {
  try {
    execFileSync("mknod", [file, "c", "1", "3"], { stdio: "pipe" });
    return file;
  } catch {
    return undefined;
  }
}

/** A unix socket bound at `file` (kept listening until closed: Node removes the file on close). */
function listenOn(file: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(file, () => resolve(s));
  });
}

/**
 * The process's RSS grew by less than 256 MiB — where the database runs in another process. On the
 * embedded PGlite the database is this process: the files capture stored are its pages, in this
 * RSS, so there only the capture's own buffers (arrayBuffers, asserted on both) say what capture held.
 */
function rssGrowthAllowed(b: TurnBerth, rss: number): boolean {
  return b.database.kind === "pglite" || rss < 256 * MiB;
}

/** The highest growth of rss and arrayBuffers over `base` while `work` runs, sampled every 5 ms. */
async function peakGrowth<T>(work: () => Promise<T>): Promise<{ result: T; rss: number; arrayBuffers: number }> {
  const base = process.memoryUsage();
  let rss = 0;
  let arrayBuffers = 0;
  const sample = () => {
    const m = process.memoryUsage();
    rss = Math.max(rss, m.rss - base.rss);
    arrayBuffers = Math.max(arrayBuffers, m.arrayBuffers - base.arrayBuffers);
  };
  const timer = setInterval(sample, 5);
  try {
    const result = await work();
    sample();
    return { result, rss, arrayBuffers };
  } finally {
    clearInterval(timer);
  }
}

/** `n` sparse files of `size` bytes under `dir` (no disk cost): their repository-relative paths. */
function sparseFiles(env: string, dir: string, n: number, size: number): string[] {
  mkdirSync(path.join(env, dir), { recursive: true });
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const rel = `${dir}/f${String(i).padStart(2, "0")}.bin`;
    writeFileSync(path.join(env, rel), "");
    truncateSync(path.join(env, rel), size);
    out.push(rel);
  }
  return out;
}

describe("issue 26: capture holds against any file an agent can make", () => {
  let b: TurnBerth;
  let source: string;
  let outside: string;
  let socketServer: Server | undefined;

  beforeAll(async () => {
    source = makeGitRepo(6);
    outside = mkdtempSync(path.join(tmpdir(), "berth-outside-"));
    writeFileSync(path.join(outside, "token"), "server-secret-token\n");
    b = await startTurnBerth({ instances: 1 });
  });
  afterAll(async () => {
    await new Promise<void>((r) => (socketServer ? socketServer.close(() => r()) : r()));
    await b?.close();
    rmSync(source, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  it("FIFOs (a .gitignore FIFO at the top and in a new directory), a socket, a device node, links, a 300 MB sparse .gitignore and sparse 8 MiB files: EndTurn answers within a normal deadline and bounded memory, every regular file captured, every other one reported", async () => {
    const { sessionId, workspaceId } = await newSession(b, source);
    const t = await b.turns.beginTurn({ sessionId });
    const env = t.environmentPath;
    execFileSync("mkfifo", [path.join(env, ".gitignore")]);
    mkdirSync(path.join(env, "newdir"));
    execFileSync("mkfifo", [path.join(env, "newdir", ".gitignore")]);
    writeFileSync(path.join(env, "newdir", "kept.txt"), "a file beside a FIFO .gitignore\n");
    execFileSync("mkfifo", [path.join(env, "pipe")]);
    socketServer = await listenOn(path.join(env, "sock"));
    const device = tryMknod(path.join(env, "dev-null"));
    symlinkSync(path.join(outside, "token"), path.join(env, "link-out"));
    linkSync(path.join(outside, "token"), path.join(env, "hard-token"));
    // A huge ignore file in a directory the base has: neither read by Berth nor handed to git.
    writeFileSync(path.join(env, "pkg1", ".gitignore"), "");
    truncateSync(path.join(env, "pkg1", ".gitignore"), 300 * MiB);
    const sparse = sparseFiles(env, "sparse", 4, 8 * MiB);
    writeFileSync(path.join(env, "README.md"), "# changed\n");
    writeFileSync(path.join(env, "notes.txt"), "notes\n");

    // A hang is for ever: a deadline far above the work's own time (2 s alone, tens of seconds on a
    // loaded two-core machine, the database in this process on PGlite) tells one from the other.
    const { result: ended, arrayBuffers, rss } = await peakGrowth(() => b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED }, { deadlineMs: HANG_MS }));
    expect([...ended.capturedPaths].sort()).toEqual(["README.md", "newdir/kept.txt", "notes.txt", ...sparse].sort());
    const leftOut = Object.fromEntries(ended.leftOut.map((l) => [l.path, l.reason]));
    expect(leftOut).toEqual({
      ".gitignore": "special_file",
      "newdir/.gitignore": "special_file",
      pipe: "special_file",
      sock: "special_file",
      ...(device ? { "dev-null": "special_file" } : {}),
      "link-out": "symlink",
      "hard-token": "hardlink",
      "pkg1/.gitignore": "too_large",
    });
    expect(arrayBuffers).toBeLessThan(128 * MiB);
    expect(rssGrowthAllowed(b, rss), `rss grew by ${rss} bytes`).toBe(true);
    // The file outside was never read through its second name.
    const rows = await sql<{ path: string }>`SELECT path FROM overlay_files WHERE workspace_id = ${workspaceId}::uuid AND path IN ('hard-token', 'link-out', 'pkg1/.gitignore')`.execute(b.database.opened.db);
    expect(rows.rows).toEqual([]);
    expect((await failure(b.ws.readFile({ sessionId, path: "hard-token" }))).code).toBe("NOT_FOUND");
  }, 2 * HANG_MS);

  it("a FIFO .gitignore only in a directory the agent made (git would block on it): EndTurn answers within a normal deadline, the FIFO reported, the files beside it captured", async () => {
    const { sessionId } = await newSession(b, source);
    const t = await b.turns.beginTurn({ sessionId });
    const env = t.environmentPath;
    mkdirSync(path.join(env, "fresh", "deeper"), { recursive: true });
    execFileSync("mkfifo", [path.join(env, "fresh", "deeper", ".gitignore")]);
    writeFileSync(path.join(env, "fresh", "deeper", "kept.txt"), "kept\n");
    writeFileSync(path.join(env, "README.md"), "# changed\n");
    const ended = await b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED }, { deadlineMs: HANG_MS });
    expect([...ended.capturedPaths].sort()).toEqual(["README.md", "fresh/deeper/kept.txt"]);
    expect(ended.leftOut.map((l) => [l.path, l.reason])).toEqual([["fresh/deeper/.gitignore", "special_file"]]);
    // git was stopped, not left blocked on the FIFO: the environment's index is not locked.
    expect(existsSync(path.join(env, ".git", "index.lock"))).toBe(false);
  }, 2 * HANG_MS);

  it("dozens of sparse 8 MiB files are captured one after another: the server's memory grows by a few files' worth, not by their sum", async () => {
    const { sessionId } = await newSession(b, source);
    const t = await b.turns.beginTurn({ sessionId });
    const sparse = sparseFiles(t.environmentPath, "blobs", 30, 8 * MiB);
    // The deadline is not what this test is about: 30 writes of 8 MiB take 3 s alone, and a minute
    // or more on a loaded two-core machine with the database in this process (PGlite).
    const { result: ended, arrayBuffers, rss } = await peakGrowth(() => b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED }, { deadlineMs: 4 * HANG_MS }));
    expect([...ended.capturedPaths].sort()).toEqual(sparse);
    expect(ended.leftOut).toEqual([]);
    // Today: 30 × 8 MiB = 240 MiB read before the first write.
    expect(arrayBuffers).toBeLessThan(128 * MiB);
    expect(rssGrowthAllowed(b, rss), `rss grew by ${rss} bytes`).toBe(true);
  }, 5 * HANG_MS);
});

describe("issue 26: capture checks the overlay's quota before it reads a file", () => {
  let b: TurnBerth;
  let source: string;
  const sent: string[] = [];

  beforeAll(async () => {
    source = makeGitRepo(4);
    b = await startTurnBerth({
      instances: 1,
      env: { BERTH_MAX_OVERLAY_BYTES: String(20 * MiB) },
      wrapOverlay: (real: OverlayPort): OverlayPort => ({
        writeFile: (i) => {
          sent.push(i.path);
          return real.writeFile(i);
        },
        deleteFile: (i) => real.deleteFile(i),
        entries: (ws) => real.entries(ws),
        readBase: (ws, p) => real.readBase(ws, p),
        usage: (ws) => real.usage(ws),
      }),
    });
  });
  afterAll(async () => {
    await b?.close();
    rmSync(source, { recursive: true, force: true });
  });

  it("files that cannot fit are never sent to the overlay (nor read): EndTurn answers CAPTURE_INCOMPLETE OVERLAY_QUOTA_EXCEEDED naming them, the ones that fit are stored", async () => {
    const { sessionId, workspaceId } = await newSession(b, source);
    const t = await b.turns.beginTurn({ sessionId });
    const sparse = sparseFiles(t.environmentPath, "q", 5, 8 * MiB);
    const f = await failure(b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED }, { deadlineMs: HANG_MS }));
    expect(f.reason).toBe("CAPTURE_INCOMPLETE");
    expect(f.metadata.reason).toBe("OVERLAY_QUOTA_EXCEEDED");
    const rows = await sql<{ path: string }>`SELECT path FROM overlay_files WHERE workspace_id = ${workspaceId}::uuid ORDER BY path`.execute(b.database.opened.db);
    expect(rows.rows.map((r) => r.path)).toHaveLength(2);
    expect(f.metadata.paths!.split(",").sort()).toEqual(sparse.filter((p) => !rows.rows.some((r) => r.path === p)));
    // Only what fits was sent: the 20 MiB quota holds two 8 MiB files.
    expect(sent.filter((p) => p.startsWith("q/"))).toHaveLength(2);
  }, 2 * HANG_MS);
});
