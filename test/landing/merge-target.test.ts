/**
 * Where and how MERGED lands (issue 26, items 3–5), through the real server with real git
 * repositories: the default target is held to the rules an explicit target_ref is; no program
 * the source's configuration or attributes name runs during the merge; the source's checkout of
 * the target is brought along when it is clean and the merge refused, with nothing moved, when
 * it is not.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChangesetState } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { failure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";
import { BASE_FILES, approve, gitRepo, registered, sha, treeOf, write, type Repo } from "./helpers.js";

type Client = TestBerth["grpc"];

async function approvedChange(client: Client, repo: Repo, name: string, files: Record<string, [string, string | null]>) {
  const { open } = await registered(client, repo, name);
  const ws = await open("agent-a", { intent: `Change for ${name}` });
  for (const [p, [content, over]] of Object.entries(files)) await write(client, ws.sessionId, p, content, over);
  await approve(client, ws.changesetId);
  return ws;
}

const stateOf = async (client: Client, sessionId: string) => (await client.getWorkspace({ sessionId })).workspace!.changesetState;

/**
 * Plants, in the source's own configuration and attributes, every way a repository can name a
 * program for git to run while merging or checking out: a merge driver chosen by attributes
 * (info/attributes, the checkout's .gitattributes, and merge.default for every file), a
 * renormalizing merge (which runs clean filters), filter drivers, and hooks. Each program
 * leaves a marker named after itself in the returned directory.
 */
function plantPrograms(repo: Repo): { markers: () => string[] } {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-markers-"));
  const program = (name: string, then: string) => `touch '${path.join(dir, name)}'; ${then}`;
  repo.git("config", "merge.evil.name", "a driver that must never run");
  repo.git("config", "merge.evil.driver", program("merge-driver", "cp %B %A; exit 0"));
  repo.git("config", "merge.evil.recursive", "evil");
  repo.git("config", "merge.default", "evil");
  repo.git("config", "merge.renormalize", "true");
  repo.git("config", "filter.evil.clean", program("clean-filter", "cat"));
  repo.git("config", "filter.evil.smudge", program("smudge-filter", "cat"));
  repo.git("config", "filter.evil.required", "true");
  const gitDir = repo.git("rev-parse", "--absolute-git-dir");
  mkdirSync(path.join(gitDir, "info"), { recursive: true });
  writeFileSync(path.join(gitDir, "info", "attributes"), "* merge=evil filter=evil\n");
  const hooks = path.join(gitDir, "hooks");
  mkdirSync(hooks, { recursive: true });
  for (const hook of ["reference-transaction", "post-merge", "post-checkout", "post-index-change"]) {
    writeFileSync(path.join(hooks, hook), `#!/bin/sh\n${program(`hook-${hook}`, "exit 0")}\n`, { mode: 0o755 });
  }
  return { markers: () => readdirSync(dir).sort() };
}

/** What `git status --porcelain` says in the checkout, with nothing the test planted in the way. */
function status(repo: Repo, dir = repo.dir): string {
  return repo.git("-C", dir, "-c", "core.hooksPath=/dev/null", "status", "--porcelain");
}

/**
 * A repository whose `main` is checked out in its own work tree, a changeset that changes,
 * adds and deletes files approved on its base, and `main` moved on by an unrelated commit
 * (so the merge is a three-way one), the work tree clean.
 */
async function checkedOutMerge(client: Client, name: string) {
  const repo = gitRepo();
  const ws = await approvedChange(client, repo, name, {
    "src/app.ts": ["export const answer = 42;\n", BASE_FILES["src/app.ts"]!],
    "docs/new.md": ["a new file\n", null],
  });
  await client.deleteFile({ sessionId: ws.sessionId, path: "src/old.ts", expectedHash: sha(BASE_FILES["src/old.ts"]!) });
  const moved = repo.commitOn("main", { "README.md": "# demo, moved on\n" }, "unrelated");
  return { repo, ws, moved };
}

function expectMergedCheckout(repo: Repo, dir = repo.dir) {
  expect(status(repo, dir)).toBe("");
  expect(readFileSync(path.join(dir, "src/app.ts"), "utf8")).toBe("export const answer = 42;\n");
  expect(readFileSync(path.join(dir, "docs/new.md"), "utf8")).toBe("a new file\n");
  expect(readFileSync(path.join(dir, "README.md"), "utf8")).toBe("# demo, moved on\n");
  expect(existsSync(path.join(dir, "src/old.ts"))).toBe(false);
}

describe("MERGED: the target, the programs, the checkout", () => {
  let berth: TestBerth;
  beforeAll(async () => {
    berth = await startBerth();
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("refuses MERGED without a target_ref while the source's HEAD is on another changeset's berth/ branch, naming it, and moves nothing", async () => {
    const repo = gitRepo();
    const { open } = await registered(berth.grpc, repo, "target-head-berth");
    const other = await open("agent-b", { intent: "Other work" });
    await write(berth.grpc, other.sessionId, "notes.txt", "other work\n");
    const otherCommit = (await berth.grpc.commitChangeset({ changesetId: other.changesetId })).commitId;
    // Someone looks at the other changeset's work in the source's checkout.
    repo.git("checkout", "-q", `berth/${other.changesetId}`);

    const ws = await open("agent-a", { intent: "This work" });
    await write(berth.grpc, ws.sessionId, "src/app.ts", "export const answer = 42;\n");
    await approve(berth.grpc, ws.changesetId);
    const refused = await failure(berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED }));
    expect(refused).toMatchObject({
      code: "FAILED_PRECONDITION",
      reason: "NO_DEFAULT_BRANCH",
      metadata: { changeset_id: ws.changesetId, source_head: `refs/heads/berth/${other.changesetId}` },
    });
    expect(refused.message).toContain("target_ref");
    expect(repo.git("rev-parse", `berth/${other.changesetId}`)).toBe(otherCommit);
    expect(repo.git("rev-parse", "main")).toBe(repo.base);
    expect(repo.git("for-each-ref", "--format=%(refname)", `refs/heads/berth/${ws.changesetId}`)).toBe("");
    expect(await stateOf(berth.grpc, ws.sessionId)).toBe(ChangesetState.APPROVED);

    // Named, the target is taken: the refusal said what to do.
    const merged = await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED, targetRef: "main" });
    expect(merged.merge).toMatchObject({ targetRef: "refs/heads/main", fastForward: true });
    expect(repo.git("rev-parse", `berth/${other.changesetId}`)).toBe(otherCommit);
  });

  it("runs no merge driver, filter or hook that the source's config or attributes name: a three-way merge completes as git's built-in merge, a conflict conflicts", async () => {
    const repo = gitRepo();
    // The target, not checked out, changes the first line of notes.txt; the changeset the last,
    // and brings a .gitattributes naming the driver for every file.
    repo.git("branch", "release");
    repo.commitOn("release", { "notes.txt": "LINE ONE\nline two\nline three\n" }, "release edit");
    repo.git("checkout", "-q", "main");
    const ws = await approvedChange(berth.grpc, repo, "no-programs", {
      "notes.txt": ["line one\nline two\nLINE THREE\n", BASE_FILES["notes.txt"]!],
      ".gitattributes": ["* merge=evil filter=evil\n", null],
    });
    // A second changeset and the target both change run.sh's one line: a conflict for later.
    const clash = await approvedChange(berth.grpc, repo, "no-programs-clash", { "run.sh": ["#!/bin/sh\necho berth\n", BASE_FILES["run.sh"]!] });
    const human = repo.commitOn("release", { "run.sh": "#!/bin/sh\necho human\n" }, "human edit");
    repo.git("checkout", "-q", "main");
    // Planted last: the test's own git commands above would run them.
    const planted = plantPrograms(repo);

    const merged = await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED, targetRef: "release" });
    expect(planted.markers()).toEqual([]);
    expect(merged.merge).toMatchObject({ targetRef: "refs/heads/release", oldCommitId: human, fastForward: false });
    expect(repo.git("rev-parse", "release")).toBe(merged.merge!.newCommitId);
    const tree = treeOf(repo, "release");
    expect(tree.get("notes.txt")![1]).toBe("LINE ONE\nline two\nLINE THREE\n");
    expect(tree.get(".gitattributes")![1]).toBe("* merge=evil filter=evil\n");

    // Both sides change one line: git's built-in merge conflicts (the driver would have taken one side).
    const refused = await failure(berth.grpc.transitionChangeset({ changesetId: clash.changesetId, toState: ChangesetState.MERGED, targetRef: "release" }));
    expect(refused).toMatchObject({ code: "FAILED_PRECONDITION", reason: "MERGE_CONFLICT", metadata: { target_commit: merged.merge!.newCommitId } });
    expect(JSON.parse(refused.metadata.paths!)).toEqual(["run.sh"]);
    expect(planted.markers()).toEqual([]);
  });

  it("brings the source's clean checkout of the target along: git status is clean there and the work tree holds the merged files", async () => {
    const { repo, ws, moved } = await checkedOutMerge(berth.grpc, "checkout-clean");
    const merged = await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED });
    expect(merged.merge).toMatchObject({ targetRef: "refs/heads/main", oldCommitId: moved, fastForward: false });
    expect(repo.git("rev-parse", "HEAD")).toBe(merged.merge!.newCommitId);
    expectMergedCheckout(repo);
  });

  it("updates the checkout with no filter or hook the source names running", async () => {
    const { repo, ws } = await checkedOutMerge(berth.grpc, "checkout-no-programs");
    const planted = plantPrograms(repo);
    await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED });
    expect(planted.markers()).toEqual([]);
    repo.git("config", "--remove-section", "filter.evil");
    expectMergedCheckout(repo);
  });

  it("brings a linked worktree that has the target checked out along", async () => {
    const repo = gitRepo();
    const linked = path.join(mkdtempSync(path.join(tmpdir(), "berth-linked-")), "wt");
    repo.git("worktree", "add", "-q", "-b", "feature", linked, "main");
    const ws = await approvedChange(berth.grpc, repo, "checkout-linked", { "src/app.ts": ["export const answer = 42;\n", BASE_FILES["src/app.ts"]!] });
    // Dirty there first: refused, the worktree named relative to the source (server paths are admins' only).
    writeFileSync(path.join(linked, "README.md"), "edited in the linked worktree\n");
    expect(await failure(berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED, targetRef: "feature" }))).toMatchObject({
      reason: "TARGET_CHECKED_OUT_DIRTY",
      metadata: { target_ref: "refs/heads/feature", worktree: path.relative(repo.dir, linked) },
    });
    expect(repo.git("rev-parse", "feature")).toBe(repo.base);
    repo.git("-C", linked, "checkout", "--", "README.md");
    const merged = await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED, targetRef: "feature" });
    expect(merged.merge).toMatchObject({ targetRef: "refs/heads/feature", fastForward: true });
    expect(status(repo, linked)).toBe("");
    expect(readFileSync(path.join(linked, "src/app.ts"), "utf8")).toBe("export const answer = 42;\n");
    // main, checked out in the main work tree, was not the target: untouched.
    expect(repo.git("rev-parse", "main")).toBe(repo.base);
    expect(status(repo)).toBe("");
  });

  it("refuses to merge into a checked-out branch whose checkout has uncommitted changes, naming the worktree, with nothing moved; merges once it is clean", { timeout: 120_000 }, async () => {
    const { repo, ws, moved } = await checkedOutMerge(berth.grpc, "checkout-dirty");
    writeFileSync(path.join(repo.dir, "notes.txt"), "my unsaved edit\n");
    const refused = await failure(berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED }));
    expect(refused).toMatchObject({
      code: "FAILED_PRECONDITION",
      reason: "TARGET_CHECKED_OUT_DIRTY",
      metadata: { changeset_id: ws.changesetId, target_ref: "refs/heads/main", worktree: "." },
    });
    expect(repo.git("rev-parse", "main")).toBe(moved);
    expect(readFileSync(path.join(repo.dir, "notes.txt"), "utf8")).toBe("my unsaved edit\n");
    expect(repo.git("diff", "--name-only")).toBe("notes.txt");
    expect(await stateOf(berth.grpc, ws.sessionId)).toBe(ChangesetState.APPROVED);

    // A staged change is as uncommitted.
    repo.git("add", "notes.txt");
    expect(await failure(berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED }))).toMatchObject({ reason: "TARGET_CHECKED_OUT_DIRTY" });
    expect(repo.git("diff", "--cached", "--name-only")).toBe("notes.txt");

    // An untracked file where the merge would write one is not overwritten.
    repo.git("reset", "-q", "--hard");
    mkdirSync(path.join(repo.dir, "docs"), { recursive: true });
    writeFileSync(path.join(repo.dir, "docs/new.md"), "mine, untracked\n");
    expect(await failure(berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED }))).toMatchObject({ reason: "TARGET_CHECKED_OUT_DIRTY" });
    expect(readFileSync(path.join(repo.dir, "docs/new.md"), "utf8")).toBe("mine, untracked\n");
    expect(repo.git("rev-parse", "main")).toBe(moved);
    expect(readFileSync(path.join(repo.dir, "src/app.ts"), "utf8")).toBe(BASE_FILES["src/app.ts"]);

    repo.git("clean", "-q", "-fd");
    const merged = await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED });
    expect(merged.changeset!.state).toBe(ChangesetState.MERGED);
    expectMergedCheckout(repo);
  });
});

needs({ postgres: true })("MERGED into a checked-out branch on two instances", () => {
  let berth: TestBerth;
  beforeAll(async () => {
    berth = await startBerth({ kind: "postgres", instances: 2 });
  });
  afterAll(async () => {
    await berth?.close();
  });

  needs({ postgres: true }).it("brings the source's clean checkout of the target along whichever instance merges", async () => {
    expect(berth.servers).toHaveLength(2);
    const { repo, ws, moved } = await checkedOutMerge(berth.grpc, "checkout-two");
    const merged = await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED });
    expect(merged.merge).toMatchObject({ oldCommitId: moved, fastForward: false });
    expect(repo.git("rev-parse", "HEAD")).toBe(merged.merge!.newCommitId);
    expectMergedCheckout(repo);
  }, 120_000);
});
