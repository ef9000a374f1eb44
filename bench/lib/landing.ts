/**
 * Shared set-up of the landing scenarios (issue 30): many files written into a session through
 * WriteFile, and git's own doing of the same work in a checkout of the same repository, timed
 * by the scenario itself.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { ChangesetState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import {
  CreateWorkspaceRequestSchema,
  CreateWorkspaceResponseSchema,
  DestroyWorkspaceRequestSchema,
  DestroyWorkspaceResponseSchema,
  TransitionChangesetRequestSchema,
  TransitionChangesetResponseSchema,
  WriteFileRequestSchema,
  WriteFileResponseSchema,
} from "../../gen/berth/v1/workspace_service_pb.js";
import { CREATE_WORKSPACE, SERVICE } from "./fixtures.js";
import { mapLimit, type RpcClient } from "./rpc.js";

/** The in-flight WriteFile calls of a set-up (not measured). */
const WRITE_IN_FLIGHT = 16;

export const sha256 = (b: Uint8Array | string) => createHash("sha256").update(b).digest("hex");

/** One file of a changeset: its path, new content, and the content it replaces (null: a new file). */
export interface FileWrite {
  readonly path: string;
  readonly content: Uint8Array;
  readonly over: Uint8Array | string | null;
}

/** git with the bench's identity and no global or system config. */
export function git(dir: string, args: readonly string[], input?: string): string {
  return execFileSync("git", ["-C", dir, "-c", "user.email=bench@example.com", "-c", "user.name=bench", "-c", "advice.detachedHead=false", ...args], {
    env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" },
    maxBuffer: 1 << 30,
    stdio: ["pipe", "pipe", "pipe"],
    ...(input !== undefined ? { input } : {}),
  }).toString("utf8").trim();
}

/** Wall time of `fn` in milliseconds, with its result. */
export async function timed<T>(fn: () => Promise<T> | T): Promise<[T, number]> {
  const t = performance.now();
  const r = await fn();
  return [r, performance.now() - t];
}

/** A persistent session on `base` (a fresh changeset). */
export async function openSession(c: RpcClient, repoId: string, agent: string, base = "main"): Promise<{ sessionId: string; changesetId: string }> {
  const ws = (await c.unary(CREATE_WORKSPACE, CreateWorkspaceRequestSchema, CreateWorkspaceResponseSchema, { repoId, agentId: agent, intent: "bench: land many files", baseCommit: base, mode: WorkspaceMode.PERSISTENT })).workspace!;
  return { sessionId: ws.sessionId, changesetId: ws.changesetId };
}

/** Writes every file into the session through WriteFile, WRITE_IN_FLIGHT at a time. */
export async function writeAll(c: RpcClient, sessionId: string, files: readonly FileWrite[]): Promise<void> {
  await mapLimit(files, WRITE_IN_FLIGHT, (f) =>
    c.unary(`${SERVICE}/WriteFile`, WriteFileRequestSchema, WriteFileResponseSchema, { sessionId, path: f.path, content: f.content, expectedHash: f.over === null ? "" : sha256(f.over) }, 60_000),
  );
}

/** Ends a session (its claims with it): the next round's sessions change the same symbols. */
export async function destroy(c: RpcClient, sessionId: string): Promise<void> {
  await c.unary(`${SERVICE}/DestroyWorkspace`, DestroyWorkspaceRequestSchema, DestroyWorkspaceResponseSchema, { sessionId });
}

/** SUBMITTED, VERIFYING, APPROVED. */
export async function approve(c: RpcClient, changesetId: string): Promise<void> {
  for (const toState of [ChangesetState.SUBMITTED, ChangesetState.VERIFYING, ChangesetState.APPROVED]) {
    await c.unary(`${SERVICE}/TransitionChangeset`, TransitionChangesetRequestSchema, TransitionChangesetResponseSchema, { changesetId, toState });
  }
}

/** A checkout of `commit` of `source` (clone --shared: objects borrowed, a working tree of its own). */
export function checkout(source: string, commit = "main"): string {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-bench-co-"));
  execFileSync("git", ["clone", "-q", "--shared", source, dir], { env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" }, stdio: "pipe" });
  if (commit !== "main") git(dir, ["checkout", "-q", commit]);
  return dir;
}

/** Writes the files into a working tree. */
export function writeTree(dir: string, files: readonly FileWrite[]): void {
  for (const f of files) {
    mkdirSync(path.dirname(path.join(dir, f.path)), { recursive: true });
    writeFileSync(path.join(dir, f.path), f.content);
  }
}

/** Commits files on the current branch of `source`'s own working tree; returns the commit. */
export function commitFiles(source: string, files: readonly FileWrite[], message: string): string {
  writeTree(source, files);
  git(source, ["add", "-A"]);
  git(source, ["commit", "-q", "-m", message]);
  return git(source, ["rev-parse", "HEAD"]);
}

/** The server's resident set (KiB) sampled every `everyMs` while `work` runs: its peak and its value before. */
export async function peakRss<T>(rssKiB: () => number, work: () => Promise<T>, everyMs = 5): Promise<{ result: T; beforeKiB: number; peakKiB: number }> {
  const beforeKiB = rssKiB();
  let peakKiB = beforeKiB;
  const timer = setInterval(() => {
    peakKiB = Math.max(peakKiB, rssKiB());
  }, everyMs);
  try {
    const result = await work();
    peakKiB = Math.max(peakKiB, rssKiB());
    return { result, beforeKiB, peakKiB };
  } finally {
    clearInterval(timer);
  }
}
