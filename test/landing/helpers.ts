/** Shared set-up of the landing tests: real git repositories and a changeset's life through the real server. */
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ChangesetState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import type { Event } from "../../gen/berth/v1/event_pb.js";
import type { TestBerth } from "../support/berth.js";

export const sha = (b: string | Uint8Array) => createHash("sha256").update(b).digest("hex");
export const bytes = (s: string) => new TextEncoder().encode(s);

/** The base files of every test repository (run.sh executable). */
export const BASE_FILES: Readonly<Record<string, string>> = {
  "README.md": "# demo\n",
  "src/app.ts": "export const answer = 41;\n",
  "src/old.ts": "export const gone = true;\n",
  "run.sh": "#!/bin/sh\necho hi\n",
  "notes.txt": "line one\nline two\nline three\n",
};

export interface Repo {
  readonly dir: string;
  readonly base: string;
  git(...args: string[]): string;
  /** Commits `files` on `branch` (checked out in the repository's own working tree). */
  commitOn(branch: string, files: Record<string, string>, message: string): string;
}

export function gitRepo(): Repo {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-landing-"));
  const git = (...args: string[]) =>
    execFileSync("git", ["-C", dir, "-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { encoding: "utf8", env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null" } }).trim();
  git("init", "-q", "-b", "main");
  for (const [p, content] of Object.entries(BASE_FILES)) {
    mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
    writeFileSync(path.join(dir, p), content);
  }
  chmodSync(path.join(dir, "run.sh"), 0o755);
  git("add", "-A");
  git("commit", "-q", "-m", "base");
  const base = git("rev-parse", "HEAD");
  const commitOn = (branch: string, files: Record<string, string>, message: string) => {
    git("checkout", "-q", branch);
    for (const [p, content] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
      writeFileSync(path.join(dir, p), content);
    }
    git("add", "-A");
    git("commit", "-q", "-m", message);
    return git("rev-parse", "HEAD");
  };
  return { dir, base, git, commitOn };
}

/** Every blob of a commit's tree: path → [mode, content]. */
export function treeOf(repo: Repo, commit: string): Map<string, [string, string]> {
  const out = new Map<string, [string, string]>();
  for (const line of repo.git("ls-tree", "-r", "--full-tree", commit).split("\n")) {
    if (line === "") continue;
    const [meta, p] = line.split("\t") as [string, string];
    const [mode, , oid] = meta.split(" ") as [string, string, string];
    out.set(p, [mode, execFileSync("git", ["-C", repo.dir, "cat-file", "blob", oid], { encoding: "utf8" })]);
  }
  return out;
}

type Client = TestBerth["grpc"];

/** A repository registered with its source_path, and a way to open sessions on it. */
export async function registered(client: Client, repo: Repo, name: string) {
  const repoId = (await client.registerRepository({ name, sourcePath: repo.dir })).repository!.id;
  const open = async (agentId: string, opts: { changesetId?: string; baseCommit?: string; intent?: string } = {}) =>
    (await client.createWorkspace({ repoId, agentId, baseCommit: opts.baseCommit ?? "main", intent: opts.intent ?? "", mode: WorkspaceMode.PERSISTENT, ...(opts.changesetId ? { changesetId: opts.changesetId } : {}) })).workspace!;
  return { repoId, open };
}

/** Writes `content` at `p` over the base file (or as a new file). */
export async function write(client: Client, sessionId: string, p: string, content: string, over: string | null = BASE_FILES[p] ?? null) {
  return client.writeFile({ sessionId, path: p, content: bytes(content), expectedHash: over === null ? "" : sha(over) });
}

export async function approve(client: Client, changesetId: string) {
  for (const to of [ChangesetState.SUBMITTED, ChangesetState.VERIFYING, ChangesetState.APPROVED]) await client.transitionChangeset({ changesetId, toState: to });
}

/** The stored events of a repository up to the first of kind `last` (WatchEvents replays from seq 0). */
export async function eventsUntil(client: Client, repoId: string, kinds: string[], count: number): Promise<Event[]> {
  const ac = new AbortController();
  const got: Event[] = [];
  try {
    for await (const m of client.watchEvents({ afterSeq: 0n, repoIds: [repoId], kinds }, { signal: ac.signal })) {
      got.push(m.event!);
      if (got.length >= count) break;
    }
  } finally {
    ac.abort();
  }
  return got;
}
