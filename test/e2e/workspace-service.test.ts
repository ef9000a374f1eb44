/**
 * WorkspaceService end to end: a real server on free ports, a real database, and the same
 * scenarios through a @grpc/grpc-js client (gRPC port) and a Connect client (HTTP port).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChangesetState, LifecycleState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { failure } from "../support/rpc-error.js";

let berth: TestBerth;

beforeAll(async () => {
  berth = await startBerth();
});
afterAll(async () => {
  await berth?.close();
});

function gitRepo(): { dir: string; head: string } {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-src-"));
  const git = (...args: string[]) => execFileSync("git", ["-C", dir, ...args], { encoding: "utf8" }).trim();
  git("init", "-q", "-b", "main");
  git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "first");
  return { dir, head: git("rev-parse", "HEAD") };
}

async function rowCounts() {
  const db = berth.database.opened.db;
  const count = async (t: "repositories" | "workspaces" | "changesets" | "events") =>
    Number((await db.selectFrom(t).select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow()).n);
  return { repositories: await count("repositories"), workspaces: await count("workspaces"), changesets: await count("changesets"), events: await count("events") };
}

type Api = "grpc" | "connect" | "grpcWeb";
const APIS: Api[] = ["grpc", "connect", "grpcWeb"];

describe.each(APIS)("over %s", (api) => {
  const client = () => berth[api];

  it("registers a repository, opens a workspace, lists, counts, transitions and destroys it", async () => {
    const { repository } = await client().registerRepository({ name: `repo-${api}` });
    expect(repository?.id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await client().listRepositories({})).repositories.map((r) => r.name)).toContain(`repo-${api}`);

    const { workspace } = await client().createWorkspace({
      repoId: repository!.id,
      intent: "add a health check",
      baseCommit: "abc123",
      mode: WorkspaceMode.EPHEMERAL,
      agentId: "claude-1",
    });
    expect(workspace).toMatchObject({
      repoId: repository!.id,
      agentId: "claude-1",
      agentName: "agent-1",
      intent: "add a health check",
      baseCommit: "abc123",
      mode: WorkspaceMode.EPHEMERAL,
      changesetState: ChangesetState.DRAFT,
      lifecycleState: LifecycleState.ACTIVE,
    });
    expect(workspace!.sessionId).toMatch(/^[0-9a-f-]{36}$/);

    const got = await client().getWorkspace({ sessionId: workspace!.sessionId });
    expect(got.workspace?.workspaceId).toBe(workspace!.workspaceId);

    const second = await client().createWorkspace({ repoId: repository!.id, baseCommit: "abc123", mode: WorkspaceMode.PERSISTENT, ttlSeconds: 60, agentId: "claude-2" });
    expect(second.workspace?.agentName).toBe("agent-2");
    expect(Number(second.workspace!.expiresAt!.seconds) - Number(second.workspace!.createdAt!.seconds)).toBe(60);

    const sessions = await client().listSessions({ repoId: repository!.id });
    expect(sessions.sessions.map((s) => s.agentName)).toEqual(["agent-1", "agent-2"]);
    const counts = await client().countActive({ repoId: repository!.id });
    expect(counts.active).toBe(2);
    expect(counts.total).toBeGreaterThanOrEqual(2);

    const changesetId = workspace!.changesetId;
    for (const to of [ChangesetState.SUBMITTED, ChangesetState.VERIFYING, ChangesetState.APPROVED, ChangesetState.MERGED]) {
      const { changeset } = await client().transitionChangeset({ changesetId, toState: to, reason: "ok" });
      expect(changeset?.state).toBe(to);
    }
    const terminal = await failure(client().transitionChangeset({ changesetId, toState: ChangesetState.CLOSED }));
    expect(terminal).toMatchObject({ code: "FAILED_PRECONDITION", reason: "CHANGESET_TERMINAL" });
    expect((await client().getWorkspace({ sessionId: workspace!.sessionId })).workspace?.changesetState).toBe(ChangesetState.MERGED);

    const destroyed = await client().destroyWorkspace({ sessionId: workspace!.sessionId });
    expect(destroyed.workspace?.lifecycleState).toBe(LifecycleState.DESTROYED);
    expect((await client().getWorkspace({ sessionId: workspace!.sessionId })).workspace?.lifecycleState).toBe(LifecycleState.DESTROYED);
    expect((await client().countActive({ repoId: repository!.id })).active).toBe(1);
    expect((await client().listSessions({ repoId: repository!.id })).sessions.map((s) => s.agentName)).toEqual(["agent-2"]);
    // Destroying twice is idempotent.
    expect((await client().destroyWorkspace({ sessionId: workspace!.sessionId })).workspace?.lifecycleState).toBe(LifecycleState.DESTROYED);
  });

  it("refuses an illegal transition with INVALID_TRANSITION and the states in the details", async () => {
    const { repository } = await client().registerRepository({ name: `illegal-${api}` });
    const { workspace } = await client().createWorkspace({ repoId: repository!.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "a" });
    const f = await failure(client().transitionChangeset({ changesetId: workspace!.changesetId, toState: ChangesetState.MERGED }));
    expect(f).toMatchObject({ code: "FAILED_PRECONDITION", reason: "INVALID_TRANSITION", metadata: { from_state: "DRAFT", to_state: "MERGED" } });
  });

  it("answers NOT_FOUND with a reason for a session and a repository that do not exist", async () => {
    const session = await failure(client().getWorkspace({ sessionId: "0b1c5e8e-4a3b-4f7e-9d2a-6c1e2f3a4b5c" }));
    expect(session).toMatchObject({ code: "NOT_FOUND", reason: "SESSION_NOT_FOUND" });
    const repo = await failure(client().listSessions({ repoId: "0b1c5e8e-4a3b-4f7e-9d2a-6c1e2f3a4b5c" }));
    expect(repo).toMatchObject({ code: "NOT_FOUND", reason: "REPOSITORY_NOT_FOUND" });
  });
});

describe("a repository with a source", () => {
  it("checks the path is a git repository and resolves base commits against it", async () => {
    const src = gitRepo();
    const { repository } = await berth.grpc.registerRepository({ name: "with-source", sourcePath: src.dir });
    expect(repository?.sourcePath).toBe(src.dir);
    const { workspace } = await berth.grpc.createWorkspace({ repoId: repository!.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "a" });
    expect(workspace?.baseCommit).toBe(src.head);
    const defaulted = await berth.grpc.createWorkspace({ repoId: repository!.id, mode: WorkspaceMode.EPHEMERAL, agentId: "a" });
    expect(defaulted.workspace?.baseCommit).toBe(src.head);

    const unknown = await failure(berth.grpc.createWorkspace({ repoId: repository!.id, baseCommit: "no-such-branch", mode: WorkspaceMode.EPHEMERAL, agentId: "a" }));
    expect(unknown).toMatchObject({ code: "INVALID_ARGUMENT", reason: "INVALID_ARGUMENT", fields: ["base_commit"] });

    const notGit = await failure(berth.grpc.registerRepository({ name: "not-git", sourcePath: tmpdir() + "/definitely-not-here" }));
    expect(notGit).toMatchObject({ code: "INVALID_ARGUMENT", fields: ["source_path"] });
    const relative = await failure(berth.grpc.registerRepository({ name: "relative", sourcePath: "some/dir" }));
    expect(relative).toMatchObject({ code: "INVALID_ARGUMENT", fields: ["source_path"] });
  });

  it("refuses a second repository of the same name with ALREADY_EXISTS", async () => {
    await berth.connect.registerRepository({ name: "twice" });
    expect(await failure(berth.connect.registerRepository({ name: "twice" }))).toMatchObject({ code: "ALREADY_EXISTS", reason: "REPOSITORY_EXISTS" });
  });
});

describe("bad input", () => {
  let repoId: string;
  let sessionId: string;
  beforeAll(async () => {
    repoId = (await berth.grpc.registerRepository({ name: "bad-input" })).repository!.id;
    sessionId = (await berth.grpc.createWorkspace({ repoId, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "a" })).workspace!.sessionId;
  });

  const long = (n: number) => "x".repeat(n);
  const cases: [string, string, string, (c: TestBerth["grpc"]) => Promise<unknown>][] = [
    ["a malformed session id", "INVALID_ARGUMENT", "session_id", (c) => c.getWorkspace({ sessionId: "not-a-uuid" })],
    ["an empty session id", "INVALID_ARGUMENT", "session_id", (c) => c.destroyWorkspace({ sessionId: "" })],
    ["an empty repository name", "INVALID_ARGUMENT", "name", (c) => c.registerRepository({ name: "" })],
    ["an oversize repository name", "INVALID_ARGUMENT", "name", (c) => c.registerRepository({ name: long(201) })],
    ["a control character in a name", "INVALID_ARGUMENT", "name", (c) => c.registerRepository({ name: "a\u0000b" })],
    ["a malformed repo id", "INVALID_ARGUMENT", "repo_id", (c) => c.createWorkspace({ repoId: "123", baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "a" })],
    ["an unknown mode", "INVALID_ARGUMENT", "mode", (c) => c.createWorkspace({ repoId, baseCommit: "main", mode: 7 as WorkspaceMode, agentId: "a" })],
    ["a missing mode", "INVALID_ARGUMENT", "mode", (c) => c.createWorkspace({ repoId, baseCommit: "main", agentId: "a" })],
    ["an oversize intent", "INVALID_ARGUMENT", "intent", (c) => c.createWorkspace({ repoId, intent: long(4097), baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "a" })],
    ["a missing agent id (auth off)", "INVALID_ARGUMENT", "agent_id", (c) => c.createWorkspace({ repoId, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL })],
    ["a reserved agent name", "INVALID_ARGUMENT", "agent_name", (c) => c.createWorkspace({ repoId, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "a", agentName: "agent-9" })],
    ["a ttl on an ephemeral workspace", "INVALID_ARGUMENT", "ttl_seconds", (c) => c.createWorkspace({ repoId, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, ttlSeconds: 5, agentId: "a" })],
    ["a ttl over 30 days", "INVALID_ARGUMENT", "ttl_seconds", (c) => c.createWorkspace({ repoId, baseCommit: "main", mode: WorkspaceMode.PERSISTENT, ttlSeconds: 31 * 86400, agentId: "a" })],
    ["a missing base commit without a source", "INVALID_ARGUMENT", "base_commit", (c) => c.createWorkspace({ repoId, mode: WorkspaceMode.EPHEMERAL, agentId: "a" })],
    ["an unknown changeset state", "INVALID_ARGUMENT", "to_state", (c) => c.transitionChangeset({ changesetId: repoId, toState: 42 as ChangesetState })],
    ["an oversize reason", "INVALID_ARGUMENT", "reason", (c) => c.transitionChangeset({ changesetId: repoId, toState: ChangesetState.CLOSED, reason: long(1025) })],
  ];

  it.each(cases)("%s gets %s naming %s, and writes nothing", async (_name, code, field, call) => {
    const before = await rowCounts();
    const f = await failure(call(berth.grpc));
    expect(f.code).toBe(code);
    expect(f.fields).toContain(field);
    expect(f.metadata.field).toBe(field);
    expect(await rowCounts()).toEqual(before);
  });

  it("a missing repository, changeset or session writes nothing", async () => {
    const before = await rowCounts();
    const absent = "0b1c5e8e-4a3b-4f7e-9d2a-6c1e2f3a4b5c";
    expect(await failure(berth.grpc.createWorkspace({ repoId: absent, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "a" }))).toMatchObject({ code: "NOT_FOUND", reason: "REPOSITORY_NOT_FOUND" });
    expect(await failure(berth.grpc.createWorkspace({ repoId, changesetId: absent, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "a" }))).toMatchObject({ code: "NOT_FOUND", reason: "CHANGESET_NOT_FOUND" });
    expect(await failure(berth.grpc.transitionChangeset({ changesetId: absent, toState: ChangesetState.CLOSED }))).toMatchObject({ code: "NOT_FOUND", reason: "CHANGESET_NOT_FOUND" });
    expect(await failure(berth.grpc.createWorkspace({ repoId, sessionId, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "a" }))).toMatchObject({ code: "ALREADY_EXISTS", reason: "SESSION_EXISTS" });
    expect(await rowCounts()).toEqual(before);
  });

  it("the Connect JSON form refuses an unknown enum name", async () => {
    const res = await fetch(`${berth.server.httpUrl}/berth.v1.WorkspaceService/CreateWorkspace`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ repoId, baseCommit: "main", mode: "WORKSPACE_MODE_SOMETIMES", agentId: "a" }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe("invalid_argument");
  });
});

describe("concurrency", () => {
  it("names 50 concurrent agents of one repository agent-1..agent-50, and continues after a restart", async () => {
    const { repository } = await berth.grpc.registerRepository({ name: "fifty" });
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        (i % 2 ? berth.grpc : berth.connect).createWorkspace({ repoId: repository!.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: `agent-id-${i}` }),
      ),
    );
    const numbers = results.map((r) => Number(r.workspace!.agentName.replace("agent-", ""))).sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));

    await berth.stop();
    berth = await startBerth({ database: berth.database });
    const next = await berth.grpc.createWorkspace({ repoId: repository!.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "late" });
    expect(next.workspace?.agentName).toBe("agent-51");
  });

  it("creates concurrent agents named by the caller and by Berth together: the named keep their names, the others get agent-1..agent-20, each with its session.created", async () => {
    const { repository } = await berth.grpc.registerRepository({ name: "mixed-names" });
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 4 < 2 ? berth.grpc : berth.connect).createWorkspace({
          repoId: repository!.id,
          baseCommit: "main",
          mode: WorkspaceMode.EPHEMERAL,
          agentId: `mixed-${i}`,
          ...(i % 2 ? { agentName: `reviewer-${i}` } : {}),
        }),
      ),
    );
    const named = results.filter((_, i) => i % 2).map((r) => r.workspace!.agentName);
    expect(named).toEqual(Array.from({ length: 20 }, (_, k) => `reviewer-${2 * k + 1}`));
    const numbers = results.filter((_, i) => i % 2 === 0).map((r) => Number(r.workspace!.agentName.replace("agent-", ""))).sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    const events = await berth.database.opened.db.selectFrom("events").select(["session_id", "agent_id"]).where("repo_id", "=", repository!.id).where("kind", "=", "session.created").execute();
    expect(events.map((e) => e.session_id).sort()).toEqual(results.map((r) => r.workspace!.sessionId).sort());
  });

  it("answers REPOSITORY_NOT_FOUND to an agent-named create in a repository that does not exist, and writes nothing", async () => {
    const missing = "00000000-0000-4000-8000-00000000dead";
    const f = await failure(berth.grpc.createWorkspace({ repoId: missing, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "x", agentName: "named" }));
    expect(f.code).toBe("NOT_FOUND");
    expect(f.reason).toBe("REPOSITORY_NOT_FOUND");
    const rows = await berth.database.opened.db.selectFrom("workspaces").select("id").where("repo_id", "=", missing).execute();
    expect(rows).toHaveLength(0);
  });

  it("lets exactly one of 20 racing transitions win", async () => {
    const { repository } = await berth.grpc.registerRepository({ name: "race" });
    const { workspace } = await berth.grpc.createWorkspace({ repoId: repository!.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "a" });
    const outcomes = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? berth.grpc : berth.connect).transitionChangeset({
          changesetId: workspace!.changesetId,
          toState: ChangesetState.SUBMITTED,
        }),
      ),
    );
    const won = outcomes.filter((o) => o.status === "fulfilled");
    expect(won).toHaveLength(1);
    for (const lost of outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected")) {
      const f = await failure(Promise.reject(lost.reason));
      expect(f.code).toBe("FAILED_PRECONDITION");
      expect(f.reason).toBe("INVALID_TRANSITION");
      expect(f.metadata).toMatchObject({ from_state: "SUBMITTED", to_state: "SUBMITTED" });
    }
    const events = await berth.database.opened.db.selectFrom("events").select("kind").where("changeset_id", "=", workspace!.changesetId).where("kind", "=", "changeset.transitioned").execute();
    expect(events).toHaveLength(1);
  });
});

describe("restart", () => {
  it("reads back everything acknowledged before a stop", async () => {
    const { repository } = await berth.connect.registerRepository({ name: "restart" });
    const { workspace } = await berth.connect.createWorkspace({ repoId: repository!.id, intent: "persist me", baseCommit: "v1", mode: WorkspaceMode.PERSISTENT, agentId: "a" });
    await berth.connect.transitionChangeset({ changesetId: workspace!.changesetId, toState: ChangesetState.SUBMITTED });

    await berth.stop();
    berth = await startBerth({ database: berth.database });

    expect((await berth.grpc.listRepositories({})).repositories.map((r) => r.id)).toContain(repository!.id);
    const back = await berth.grpc.getWorkspace({ sessionId: workspace!.sessionId });
    expect(back.workspace).toMatchObject({
      workspaceId: workspace!.workspaceId,
      intent: "persist me",
      baseCommit: "v1",
      mode: WorkspaceMode.PERSISTENT,
      changesetState: ChangesetState.SUBMITTED,
      agentName: workspace!.agentName,
    });
    expect(back.workspace?.expiresAt?.seconds).toBe(workspace!.expiresAt?.seconds);
  });
});
