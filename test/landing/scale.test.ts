/**
 * Landing at git's speed (issue 30), through the real server with real git: a changeset of
 * 5,000 files commits to exactly the tree git itself builds from the same files, and the git
 * processes CommitChangeset, MERGED, DiffWorkspace, DiffChangeset and RebaseWorkspace start are
 * the same for 10 files as for 1,000 (counted through platform/git.ts's spawn observer: the
 * servers run in this process).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChangesetState } from "../../gen/berth/v1/types_pb.js";
import { observeGitSpawns } from "../../src/platform/git.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { BASE_FILES, approve, gitRepo, registered, sha, write, type Repo } from "./helpers.js";

let berth: TestBerth;

beforeAll(async () => {
  berth = await startBerth();
});
afterAll(async () => {
  await berth?.close();
});

/** Runs `work(i)` for i in [0, n), `lanes` at a time. */
async function inLanes(n: number, lanes: number, work: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: lanes }, async () => {
    while (next < n) await work(next++);
  }));
}

/** The git subcommands started while `work` runs, sorted (the order of concurrent ones is not fixed). */
async function gitDuring(work: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  const stop = observeGitSpawns((s) => seen.push(s.args[0] ?? ""));
  try {
    await work();
  } finally {
    stop();
  }
  return seen.sort();
}

/** A scratch checkout of `repo`'s base (clone --shared), removed by the caller. */
function scratchCheckout(repo: Repo): string {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-scale-co-"));
  execFileSync("git", ["clone", "-q", "--shared", repo.dir, dir], { env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null" } });
  return dir;
}

describe("a changeset of 5,000 files", () => {
  it("commits to the tree git builds from the same files (`git add -A; git write-tree` in a checkout)", async () => {
    const repo = gitRepo();
    const { open } = await registered(berth.grpc, repo, "scale-5000");
    const ws = await open("agent-bulk", { intent: "Generate five thousand files" });
    const files = new Map<string, string>();
    // Odd names go through fast-import's quoting as they are: spaces, quotes, UTF-8.
    files.set('odd dir/a "quoted" name ü.txt', "odd\n");
    files.set("src/app.ts", "export const answer = 42;\n");
    files.set("run.sh", "#!/bin/sh\necho changed\n");
    for (let i = 0; files.size < 4_999; i++) files.set(`gen/d${i % 25}/sub${i % 7}/file-${i}.txt`, `generated file ${i}\n${"x".repeat(i % 300)}\n`);
    const entries = [...files];
    await inLanes(entries.length, 16, (i) => write(berth.grpc, ws.sessionId, entries[i]![0], entries[i]![1], BASE_FILES[entries[i]![0]] ?? null));
    await berth.grpc.deleteFile({ sessionId: ws.sessionId, path: "src/old.ts", expectedHash: sha(BASE_FILES["src/old.ts"]!) });

    const r = await berth.grpc.commitChangeset({ changesetId: ws.changesetId, message: "Five thousand files" });
    expect(r).toMatchObject({ paths: 5_000, unchanged: false });
    expect(repo.git("rev-parse", `${r.commitId}^`)).toBe(repo.base);

    const co = scratchCheckout(repo);
    try {
      for (const [p, content] of files) {
        mkdirSync(path.dirname(path.join(co, p)), { recursive: true });
        writeFileSync(path.join(co, p), content);
      }
      rmSync(path.join(co, "src/old.ts"));
      const git = (...args: string[]) => execFileSync("git", ["-C", co, ...args], { encoding: "utf8", env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null" } }).trim();
      git("add", "-A");
      expect(r.treeId).toBe(git("write-tree"));
      // run.sh stayed executable in both.
      expect(repo.git("ls-tree", r.commitId, "run.sh").split(" ")[0]).toBe("100755");
    } finally {
      rmSync(co, { recursive: true, force: true });
    }
  }, 600_000);
});

describe("git processes per landing call", () => {
  const BASE_COUNT = 1_000;
  const lines = (i: number, first: string, last: string) => [first, ...Array.from({ length: 8 }, (_, k) => `line ${k + 2} of file ${i}`), last, ""].join("\n");
  const original = (i: number) => lines(i, `line 1 of file ${i}`, `line 10 of file ${i}`);

  /** A repository of BASE_COUNT ten-line files and, on a side branch, a commit changing the last line of the first `n`. */
  function repoFor(n: number): { repo: Repo; upstream: string } {
    const repo = gitRepo();
    const files: Record<string, string> = {};
    for (let i = 0; i < BASE_COUNT; i++) files[`lib/f${i}.txt`] = original(i);
    const base = repo.commitOn("main", files, "a thousand files");
    repo.git("checkout", "-q", "-b", "upstream");
    const changed: Record<string, string> = {};
    for (let i = 0; i < n; i++) changed[`lib/f${i}.txt`] = lines(i, `line 1 of file ${i}`, `line 10 changed upstream`);
    const upstream = repo.commitOn("upstream", changed, "upstream change");
    repo.git("checkout", "-q", "main");
    expect(repo.git("rev-parse", "main")).toBe(base);
    return { repo, upstream };
  }

  /** The git commands each landing call of a session changing `n` files starts. */
  async function commandsFor(n: number): Promise<Record<string, string[]>> {
    const { repo, upstream } = repoFor(n);
    const { open } = await registered(berth.grpc, repo, `scale-count-${n}`);
    const ws = await open("agent-count", { intent: `Change ${n} files` });
    await inLanes(n, 16, (i) => write(berth.grpc, ws.sessionId, `lib/f${i}.txt`, lines(i, `line 1 changed by the agent`, `line 10 of file ${i}`), original(i)));
    const out: Record<string, string[]> = {};
    out.DiffWorkspace = await gitDuring(async () => expect((await berth.grpc.diffWorkspace({ sessionId: ws.sessionId })).paths).toHaveLength(n));
    out.DiffChangeset = await gitDuring(async () => expect((await berth.grpc.diffChangeset({ changesetId: ws.changesetId })).paths).toHaveLength(n));
    out.RebaseWorkspace = await gitDuring(async () => expect((await berth.grpc.rebaseWorkspace({ sessionId: ws.sessionId, onto: upstream })).merged).toHaveLength(n));
    out.CommitChangeset = await gitDuring(async () => expect((await berth.grpc.commitChangeset({ changesetId: ws.changesetId, message: "Counted" })).paths).toBe(n));
    await approve(berth.grpc, ws.changesetId);
    out.MERGED = await gitDuring(async () => expect((await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED })).merge?.fastForward).toBe(true));
    // The merged tree holds both sides' lines: the rebase's merges were real.
    expect(repo.git("show", "main:lib/f0.txt")).toBe(lines(0, "line 1 changed by the agent", "line 10 changed upstream").trimEnd());
    return out;
  }

  it("is the same for a changeset of 10 files as for one of 1,000: CommitChangeset, MERGED, DiffWorkspace, DiffChangeset, RebaseWorkspace", async () => {
    const small = await commandsFor(10);
    const large = await commandsFor(1_000);
    expect(large).toEqual(small);
    for (const [call, commands] of Object.entries(small)) expect({ call, commands: commands.length > 0 }).toEqual({ call, commands: true });
    // One process takes all the files, whatever their number: the commit's (again under MERGED), the diff's tree, the rebase's merges.
    const count = (call: string, command: string) => small[call]!.filter((c) => c === command).length;
    expect([count("CommitChangeset", "fast-import"), count("MERGED", "fast-import"), count("DiffWorkspace", "fast-import"), count("DiffWorkspace", "diff-tree"), count("RebaseWorkspace", "merge-tree")]).toEqual([1, 1, 1, 1, 1]);
  }, 600_000);
});
