/**
 * An environment's identity on disk: the marker file holding its random token. The liveness probe
 * and every removal ask the marker before they trust a directory, and the directory is the
 * agent's, so the marker is read without following links or blocking on what an agent may have
 * put in its place; an unchanged marker is recognised from its stat alone.
 */
import { constants, type Stats } from "node:fs";
import { lstat, open } from "node:fs/promises";
import path from "node:path";
import type { Environment, MarkerSeen } from "./environment-model.js";

export const MARKER = ".berth-env";

export function markerSeen(st: Stats): MarkerSeen {
  return { dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs };
}

function unchanged(seen: MarkerSeen, st: Stats): boolean {
  return st.isFile() && st.dev === seen.dev && st.ino === seen.ino && st.size === seen.size && st.mtimeMs === seen.mtimeMs && st.ctimeMs === seen.ctimeMs;
}

/** Liveness: the directory exists, is readable and its marker holds this environment's token. */
export async function probe(env: Environment, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const read = holdsToken(env);
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`liveness probe of ${env.path} took longer than ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  try {
    return await Promise.race([read, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Whether the marker holds the environment's token. The marker as it was when it last held it,
 * unchanged (one lstat: one thread-pool round trip, and nothing opened), still does; anything else
 * — gone, replaced, rewritten, touched, or an lstat that fails — is decided by reading it, as
 * before, and a read that finds the token is remembered for the next probe.
 */
async function holdsToken(env: Environment): Promise<boolean> {
  const file = path.join(env.path, MARKER);
  const seen = env.markerSeen;
  if (seen !== undefined) {
    const st = await lstat(file).catch(() => undefined);
    if (st !== undefined && unchanged(seen, st)) return true;
  }
  const marker = await readMarker(file);
  if (marker?.token !== env.token) return false;
  env.markerSeen = markerSeen(marker.stat);
  return true;
}

/**
 * The marker's content and the stat of the file it was read from (taken before the read), or
 * undefined when the path is not a marker of ours: opened without following a symlink and
 * without blocking (the directory is the agent's: a FIFO or a link put in the marker's place must
 * neither hang the probe or a teardown nor be read through). One read: a token is 36 bytes, so
 * anything longer than the buffer is not a token of ours, and its truncation cannot match one.
 */
async function readMarker(file: string): Promise<{ token: string; stat: Stats } | undefined> {
  let fh;
  try {
    fh = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR" || code === "ELOOP" || code === "ENXIO") return undefined;
    throw err;
  }
  try {
    // A FIFO, socket or device is not a marker (opened non-blocking, never read). A directory
    // goes on to fail the read (EISDIR): an error, on which the probe fails open.
    const st = await fh.stat();
    if (!st.isFile() && !st.isDirectory()) return undefined;
    const buf = Buffer.allocUnsafe(128);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return { token: buf.toString("utf8", 0, bytesRead), stat: st };
  } finally {
    // The answer does not wait for the close: one thread-pool round trip less on the path of a
    // warm BeginTurn, whose probe answers before its turn row is written. A failed close loses nothing.
    fh.close().catch(() => {});
  }
}

/**
 * The token in the marker at `dir`, or undefined when there is none, it is not a regular file,
 * or it cannot be read: a directory whose marker cannot be read is not provably ours, so it is
 * never removed as ours (its removal answers "foreign" and the directory is kept).
 */
export async function markerToken(dir: string): Promise<string | undefined> {
  return readMarker(path.join(dir, MARKER)).then((m) => m?.token, () => undefined);
}
