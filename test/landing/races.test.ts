/**
 * Landing under races (issue 26, items 1 and 2), through real servers on PostgreSQL with real git:
 * writes racing a MERGED of a changeset whose commit takes a while to build (hundreds of files),
 * and several CommitChangeset calls of one changeset racing each other and the writes between
 * them. One instance, then two (writes on one, landing on the other). Also the same landing on
 * PGlite, whose one connection a landing transaction must not wait on.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createClient, type Client as ConnectClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ChangesetState } from "../../gen/berth/v1/types_pb.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { rpcFailure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";
import { BASE_FILES, approve, bytes, gitRepo, registered, sha, write, type Repo } from "./helpers.js";

/** Enough files that the changeset's commit has hundreds of objects to write (its build is seen writing them). */
const BULK = 300;

/** Any client, pinned to an instance or not: the calls the races make. */
type Client = Pick<ConnectClient<typeof WorkspaceService>, "writeFile" | "transitionChangeset" | "commitChangeset" | "abandonSession">;

/** WriteFile of `content` over `over` (null: a new file), through any of the clients. */
const put = (client: Client, sessionId: string, p: string, content: string, over: string | null) =>
  client.writeFile({ sessionId, path: p, content: bytes(content), expectedHash: over === null ? "" : sha(over) });

/** git's blob id of `content`: what the tree must name for a path written with it. */
const blobId = (content: string) => {
  const b = Buffer.from(content, "utf8");
  return createHash("sha1").update(Buffer.concat([Buffer.from(`blob ${b.length}\0`), b])).digest("hex");
};

/** Whether the repository holds the object (`git cat-file -e`: loose or packed). */
function hasObject(repo: Repo, oid: string): boolean {
  try {
    repo.git("cat-file", "-e", oid);
    return true;
  } catch {
    return false;
  }
}

/** path → blob id of every file in a commit's tree. */
function blobsOf(repo: Repo, commit: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of repo.git("ls-tree", "-r", "--full-tree", commit).split("\n")) {
    if (line === "") continue;
    const [meta, p] = line.split("\t") as [string, string];
    out.set(p, meta.split(" ")[2]!);
  }
  return out;
}

/** Runs `work(i)` for i in [0, n), `lanes` at a time. */
async function inLanes(n: number, lanes: number, work: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: lanes }, async () => {
    while (next < n) await work(next++);
  }));
}

/** A session on a fresh repository holding BULK new files, on `client`. */
async function bulkSession(client: TestBerth["grpc"], name: string) {
  const repo = gitRepo();
  const { open } = await registered(client, repo, name);
  const ws = await open("agent-a", { intent: `Many files for ${name}` });
  await inLanes(BULK, 8, (i) => write(client, ws.sessionId, `bulk/f${i}.txt`, `bulk file ${i}\n`, null));
  return { repo, ws, open };
}

type Outcome = { readonly path: string; readonly content: string; readonly ok: true } | { readonly path: string; readonly ok: false; readonly code: string; readonly reason: string | undefined };

/**
 * Writes racing a MERGED: three writers write new files on `writer` from before the MERGED is
 * sent (on `merger`) until each has been refused once the changeset is terminal. Every write
 * acknowledged must be in the merged commit, every other one refused CHANGESET_TERMINAL.
 */
async function writesRacingMerge(setup: TestBerth["grpc"], writer: Client, merger: Client, name: string) {
  const { repo, ws } = await bulkSession(setup, name);
  await approve(setup, ws.changesetId);
  const outcomes: Outcome[] = [];
  let mergeDone = false;
  let started!: () => void;
  const flowing = new Promise<void>((resolve) => (started = resolve));
  const lane = async (l: number) => {
    for (let n = 0; ; n++) {
      const p = `late/${l}-${n}.txt`;
      const content = `late write ${l}-${n}\n`;
      try {
        await put(writer, ws.sessionId, p, content, null);
        outcomes.push({ path: p, content, ok: true });
        if (outcomes.length >= 4) started();
      } catch (err) {
        const f = rpcFailure(err);
        outcomes.push({ path: p, ok: false, code: f.code, reason: f.reason });
        if (mergeDone || f.reason !== "CHANGESET_TERMINAL") return;
      }
    }
  };
  const writers = Promise.all([0, 1, 2].map(lane));
  // The writes are flowing before MERGED is asked for (a condition, not a sleep).
  await Promise.race([flowing, writers]);
  const merged = await merger.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED }).finally(() => {
    mergeDone = true;
  });
  await writers;

  expect(merged.changeset!.state).toBe(ChangesetState.MERGED);
  const refused = outcomes.filter((o) => !o.ok);
  expect(refused.length).toBeGreaterThan(0);
  expect(refused.filter((o) => o.reason !== "CHANGESET_TERMINAL")).toEqual([]);
  const acknowledged = outcomes.filter((o): o is Extract<Outcome, { ok: true }> => o.ok);
  const tree = blobsOf(repo, merged.merge!.changesetCommitId);
  expect(repo.git("rev-parse", "main")).toBe(merged.merge!.newCommitId);
  expect(repo.git("merge-base", "--is-ancestor", merged.merge!.changesetCommitId, "main")).toBe("");
  const missing = acknowledged.filter((o) => tree.get(o.path) !== blobId(o.content)).map((o) => o.path);
  expect({ acknowledged: acknowledged.length, missing }).toEqual({ acknowledged: acknowledged.length, missing: [] });
  // And nothing refused went in: the commit is exactly the overlay the merge saw.
  const late = [...tree.keys()].filter((p) => p.startsWith("late/")).sort();
  expect(late).toEqual(acknowledged.map((o) => o.path).sort());
  expect([...tree.keys()].filter((p) => p.startsWith("bulk/"))).toHaveLength(BULK);
  expect(tree.get("README.md")).toBe(blobId(BASE_FILES["README.md"]!));
}

/**
 * Two CommitChangeset calls of one changeset, the earlier slow and the later fast: the first is
 * sent while a second session holds BULK files (hundreds of objects to write), and once its
 * build is seen writing them (the first file's blob appears in the repository, loose or packed) that session is
 * abandoned (its overlay no longer counts), `state.txt` written again and the second sent, which
 * has one file to write. The later overlay must win: the branch never moves back to the first
 * call's commit, and when both have returned the branch and commit_id are the second overlay's.
 */
async function commitsRacing(setup: TestBerth["grpc"], slow: Client, fast: Client, name: string) {
  const { repo, ws: bulk, open } = await bulkSession(setup, name);
  const ws = await open("agent-a", { changesetId: bulk.changesetId, intent: "The state" });
  const message = "Racing commits";
  await put(setup, ws.sessionId, "state.txt", "round 1\n", null);
  const first = slow.commitChangeset({ changesetId: ws.changesetId, message });
  // Loose or in the pack fast-import writes (issue 30): asked of git, not of the file system.
  await vi.waitFor(() => expect(hasObject(repo, blobId("bulk file 0\n"))).toBe(true), { timeout: 60_000, interval: 5 });
  await fast.abandonSession({ sessionId: bulk.sessionId, reason: "its work is not wanted" });
  await put(fast, ws.sessionId, "state.txt", "round 2\n", "round 1\n");
  const second = fast.commitChangeset({ changesetId: ws.changesetId, message });
  const settled = await Promise.allSettled([first, second]);
  expect(settled.flatMap((s) => (s.status === "rejected" ? [rpcFailure(s.reason)] : []))).toEqual([]);

  const ref = `refs/heads/berth/${ws.changesetId}`;
  const roundOf = (commit: string) => Number(/round (\d+)/.exec(repo.git("show", `${commit}:state.txt`))![1]);
  // The ref's every move, oldest first: the rounds its commits hold never go down.
  const moves = repo.git("reflog", "show", "--format=%H", ref).split("\n").reverse().map(roundOf);
  expect(moves).toEqual([...moves].sort((a, b) => a - b));
  const final = repo.git("rev-parse", ref);
  expect(roundOf(final)).toBe(2);
  expect([...blobsOf(repo, final).keys()].filter((p) => p.startsWith("bulk/"))).toEqual([]);
  // commit_id names the same commit: committing the unchanged overlay again is `unchanged`.
  const again = await setup.commitChangeset({ changesetId: ws.changesetId, message });
  expect(again).toMatchObject({ unchanged: true, commitId: final });
  expect(again.changeset!.commitId).toBe(final);
}

needs({ postgres: true })("landing races on one instance", () => {
  let berth: TestBerth;
  beforeAll(async () => {
    berth = await startBerth({ kind: "postgres", instances: 1 });
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("merges every write acknowledged while MERGED runs, and refuses every later one CHANGESET_TERMINAL", async () => {
    await writesRacingMerge(berth.grpc, berth.grpc, berth.grpc, "race-merge-one");
  }, 120_000);

  it("never moves the branch or commit_id back to an older overlay's commit that finishes building last", async () => {
    await commitsRacing(berth.grpc, berth.grpc, berth.grpc, "race-commit-one");
  }, 120_000);
});

needs({ postgres: true })("landing races on two instances", () => {
  let berth: TestBerth;
  /** A client that stays on the first instance (a Connect transport of its own, outside the rotation). */
  let first: Client;
  /** A client that stays on the second instance. */
  let second: ReturnType<typeof createGrpcClient<typeof WorkspaceService>>;
  beforeAll(async () => {
    berth = await startBerth({ kind: "postgres", instances: 2 });
    first = createClient(WorkspaceService, createConnectTransport({ baseUrl: berth.servers[0]!.httpUrl, httpVersion: "1.1" }));
    second = createGrpcClient(WorkspaceService, berth.servers[1]!.grpcAddress);
  });
  afterAll(async () => {
    second?.close();
    await berth?.close();
  });

  it("merges on one instance every write the other acknowledged while MERGED ran, and refuses every later one", async () => {
    await writesRacingMerge(berth.grpc, second, first, "race-merge-two");
  }, 120_000);

  it("never moves the branch back to the slower, older commit when the two commits run on different instances", async () => {
    await commitsRacing(berth.grpc, first, second, "race-commit-two");
  }, 120_000);
});

describe("landing on PGlite (one connection)", () => {
  let berth: TestBerth;
  beforeAll(async () => {
    berth = await startBerth({ kind: "pglite", instances: 1 });
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("commits and merges without waiting on its own connection", async () => {
    const repo = gitRepo();
    const { open } = await registered(berth.grpc, repo, "race-pglite");
    const ws = await open("agent-a", { intent: "On PGlite" });
    await write(berth.grpc, ws.sessionId, "src/app.ts", "export const answer = 42;\n");
    const c = await berth.grpc.commitChangeset({ changesetId: ws.changesetId });
    await approve(berth.grpc, ws.changesetId);
    const m = await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED });
    expect(m.merge).toMatchObject({ changesetCommitId: c.commitId, newCommitId: c.commitId, fastForward: true });
    expect(repo.git("show", "main:src/app.ts")).toBe("export const answer = 42;");
  });
});
