/**
 * The berth command's client subcommands, run as the real binary against a real server started
 * in-process: tables for people, proto3 JSON for scripts, and exit codes 1 (the server said no),
 * 2 (usage) and 3 (unreachable).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TurnService } from "../../gen/berth/v1/turn_service_pb.js";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { berth, berthJson, gitFixture } from "./helpers.js";
import { bareRemote } from "../remote/helpers.js";

let server: TestBerth;
let url: string;
/** berth … --server <the test server>. */
const run = (...args: string[]) => berth([...args, "--server", url]);
const json = <T = Record<string, unknown>>(...args: string[]) => berthJson<T>([...args, "--server", url]);

beforeAll(async () => {
  server = await startBerth({ env: { BERTH_ENV_ROOT: mkdtempSync(path.join(tmpdir(), "berth-cli-envs-")) } });
  url = server.server.httpUrl;
});
afterAll(async () => {
  await server?.close();
});

async function newSession(repoName: string, agentId = "claude-7"): Promise<{ repoId: string; sessionId: string; changesetId: string }> {
  const { repository } = await server.grpc.registerRepository({ name: repoName });
  const { workspace } = await server.grpc.createWorkspace({
    repoId: repository!.id,
    baseCommit: "main",
    mode: WorkspaceMode.PERSISTENT,
    agentId,
    intent: "fix the flaky test",
  });
  return { repoId: repository!.id, sessionId: workspace!.sessionId, changesetId: workspace!.changesetId };
}

describe("berth repos", { timeout: 120_000 }, () => {
  it("adds a repository and lists it as an aligned table and as proto3 JSON", async () => {
    const added = await run("repos", "add", "cli-demo");
    expect(added.code).toBe(0);
    expect(added.stdout).toMatch(/^id\s+[0-9a-f-]{36}$/m);
    expect(added.stdout).toMatch(/^name\s+cli-demo$/m);

    const addedJson = await json<{ repository: { id: string; name: string; captureExclude?: string[] } }>("repos", "add", "cli-demo-2", "--capture-exclude", "dist/", "*.tmp");
    expect(addedJson.repository.name).toBe("cli-demo-2");
    expect(addedJson.repository.captureExclude).toEqual(["dist/", "*.tmp"]);

    const table = await run("repos", "ls");
    expect(table.code).toBe(0);
    const [header, ...rows] = table.stdout.trimEnd().split("\n");
    expect(header).toMatch(/^ID\s+NAME\s+SOURCE\s+REVIEW\s+CREATED$/);
    const row = rows.find((r) => r.includes(" cli-demo-2 "));
    expect(row).toBeDefined();
    // Aligned: every row's NAME starts where the header's does.
    expect(row!.indexOf("cli-demo-2")).toBe(header!.indexOf("NAME"));
    expect(table.stdout).not.toContain("\x1b["); // no colour when stdout is not a terminal

    const listed = await json<{ repositories: { id: string; name: string; createdAt: string }[] }>("repos", "ls");
    expect(listed.repositories.map((r) => r.name)).toEqual(expect.arrayContaining(["cli-demo", "cli-demo-2"]));
    expect(listed.repositories.find((r) => r.name === "cli-demo-2")).toMatchObject({ id: addedJson.repository.id, createdAt: expect.stringMatching(/Z$/) });
  });

  it("adds a repository on a git server with --remote, shows its URL, and refuses one holding credentials (exit 1, the field named)", async () => {
    const remote = bareRemote("cli-remote");
    const added = await run("repos", "add", "cli-remote", "--remote", remote.fileUrl);
    expect(added.code).toBe(0);
    expect(added.stdout).toMatch(new RegExp(`^remote\\s+${remote.fileUrl}$`, "m"));
    expect((await run("repos", "ls")).stdout).toMatch(new RegExp(`\\scli-remote\\s+${remote.fileUrl}\\s`));
    const refused = await run("repos", "add", "cli-secret", "--remote", "https://user:hunter2@127.0.0.1/x.git");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/INVALID_ARGUMENT/);
    expect(refused.stderr).toMatch(/remote_url/);
    expect(refused.stderr).not.toContain("hunter2");
  });

  it("reports the server's reason and ErrorInfo metadata, exit 1, for a duplicate name", async () => {
    await run("repos", "add", "cli-dup");
    const again = await run("repos", "add", "cli-dup");
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^berth: ALREADY_EXISTS REPOSITORY_EXISTS: .*cli-dup/m);
    expect(again.stderr).toMatch(/^ {2}name: cli-dup$/m);
    expect(again.stdout).toBe("");
  });
});

describe("berth sessions", { timeout: 120_000 }, () => {
  it("lists, shows, strands, resumes and abandons a session created over gRPC", async () => {
    const s = await newSession("cli-sessions");

    const ls = await run("sessions", "ls", "--repo", s.repoId);
    expect(ls.code).toBe(0);
    expect(ls.stdout).toMatch(/^SESSION\s+AGENT\s+STATE\s+CHANGESET\s+MODE\s+LAST ACTIVE\s+INTENT$/m);
    expect(ls.stdout).toMatch(new RegExp(`^${s.sessionId}\\s+agent-1\\s+ACTIVE\\s+DRAFT\\s+PERSISTENT\\s+.*fix the flaky test$`, "m"));
    // A repository may be named instead of its id.
    const byName = await json<{ sessions: { sessionId: string; lifecycleState: string }[] }>("sessions", "ls", "--repo", "cli-sessions");
    expect(byName.sessions).toEqual([expect.objectContaining({ sessionId: s.sessionId, lifecycleState: "LIFECYCLE_STATE_ACTIVE" })]);

    // Every page, not the first 100 (ListSessions' default page).
    const crowd = await newSession("cli-crowd");
    await Promise.all(Array.from({ length: 120 }, (_, i) => server.grpc.createWorkspace({ repoId: crowd.repoId, baseCommit: "abc123", mode: WorkspaceMode.PERSISTENT, agentId: `crowd-${i}` })));
    const all = await json<{ sessions: unknown[] }>("sessions", "ls", "--repo", crowd.repoId);
    expect(all.sessions).toHaveLength(121);

    const show = await run("sessions", "show", s.sessionId);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(new RegExp(`^session\\s+${s.sessionId}$`, "m"));
    expect(show.stdout).toMatch(/^agent\s+agent-1 \(claude-7\)$/m);
    expect(show.stdout).toMatch(/^lifecycle\s+ACTIVE$/m);

    const strand = await run("sessions", "strand", s.sessionId, "--reason", "laptop closed");
    expect(strand.code).toBe(0);
    expect(strand.stdout).toMatch(/^lifecycle\s+STRANDED$/m);
    expect(strand.stdout).toMatch(/^lifecycle reason\s+laptop closed$/m);

    // --agent defaults to the session's own agent.
    const resumed = await json<{ newSessionId: string; workspace: { sessionId: string; resumedFromSessionId: string; lifecycleState: string } }>("sessions", "resume", s.sessionId);
    expect(resumed.workspace).toMatchObject({ sessionId: resumed.newSessionId, resumedFromSessionId: s.sessionId, lifecycleState: "LIFECYCLE_STATE_ACTIVE" });

    // Resuming twice: the server's reason, exit 1.
    const twice = await run("sessions", "resume", s.sessionId, "--agent", "claude-7");
    expect(twice.code).toBe(1);
    expect(twice.stderr).toMatch(/^berth: FAILED_PRECONDITION ALREADY_RESUMED: /m);
    expect(twice.stderr).toContain(`  new_session_id: ${resumed.newSessionId}`);

    const abandoned = await run("sessions", "abandon", resumed.newSessionId, "--reason", "gave up");
    expect(abandoned.code).toBe(0);
    expect(abandoned.stdout).toMatch(/^lifecycle\s+ABANDONED$/m);
    expect(abandoned.stdout).toMatch(/^changeset\s+\S+ REJECTED$/m);

    const gone = await run("sessions", "show", "00000000-0000-4000-8000-000000000000");
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/^berth: NOT_FOUND SESSION_NOT_FOUND: /m);
  });

  it("abandons as an operator with --admin", async () => {
    const s = await newSession("cli-admin");
    const r = await json<{ workspace: { lifecycleState: string; lifecycleReason: string } }>("sessions", "abandon", s.sessionId, "--admin", "--reason", "cleanup");
    expect(r.workspace.lifecycleState).toBe("LIFECYCLE_STATE_ABANDONED");
    expect(r.workspace.lifecycleReason).toMatch(/admin/);
  });

  it("refuses sessions ls without --repo as a usage error (exit 2)", async () => {
    const r = await run("sessions", "ls");
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/required option '--repo <id>'/);
  });
});

describe("berth changeset transition", { timeout: 120_000 }, () => {
  it("moves a changeset, taking state names in either case", async () => {
    const s = await newSession("cli-changeset");
    const r = await run("changeset", "transition", s.changesetId, "submitted", "--reason", "ready");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^state\s+SUBMITTED$/m);
    expect(r.stdout).toMatch(/^reason\s+ready$/m);
    const j = await json<{ changeset: { state: string } }>("changeset", "transition", s.changesetId, "VERIFYING");
    expect(j.changeset.state).toBe("CHANGESET_STATE_VERIFYING");
  });

  it("exits 1 naming INVALID_TRANSITION and its metadata when the server refuses", async () => {
    const s = await newSession("cli-changeset-bad");
    const r = await run("changeset", "transition", s.changesetId, "merged");
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^berth: FAILED_PRECONDITION INVALID_TRANSITION: .*DRAFT.*MERGED/m);
    expect(r.stderr).toMatch(/^ {2}from_state: DRAFT$/m);
    expect(r.stderr).toMatch(/^ {2}to_state: MERGED$/m);
  });

  it("rejects an unknown state name as a usage error (exit 2) without calling the server", async () => {
    const r = await berth(["changeset", "transition", "00000000-0000-4000-8000-000000000000", "shipped", "--server", "http://127.0.0.1:1"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/expected one of draft, submitted, verifying, approved, rejected, merged, closed/);
  });
});

describe("berth turns ls, pool, map", { timeout: 120_000 }, () => {
  it("shows a running turn, the pool's occupancy and the workspace map", async () => {
    const source = gitFixture();
    const { repository } = await server.grpc.registerRepository({ name: "cli-turns", sourcePath: source });
    const { workspace } = await server.grpc.createWorkspace({ repoId: repository!.id, mode: WorkspaceMode.PERSISTENT, agentId: "claude-7" });
    const turns = createGrpcClient(TurnService, server.server.grpcAddress);
    try {
      const begun = await turns.beginTurn({ sessionId: workspace!.sessionId, clientTurnId: "cli-1" });

      // Independent commands, run side by side (each is a process start).
      const [ls, running, pool, poolJson, map, mapJson] = await Promise.all([
        run("turns", "ls", "--session", workspace!.sessionId),
        json<{ turns: { turnId: string; state: string }[] }>("turns", "ls"),
        run("pool"),
        json<{ busy: number; capacity: number; coldAcquires: string }>("pool"),
        run("map", workspace!.sessionId),
        json<{ workspaceMap: { status: string; text: string } }>("map", workspace!.sessionId),
      ]);
      expect(ls.code).toBe(0);
      expect(ls.stdout).toMatch(/^TURN\s+SESSION\s+STATE\s+OUTCOME\s+EXIT\s+WARM\s+STARTED\s+ENDED\s+ENVIRONMENT$/m);
      expect(ls.stdout).toMatch(new RegExp(`^${begun.turnId}\\s+${workspace!.sessionId}\\s+RUNNING\\s+-\\s+-\\s+no\\s+`, "m"));
      expect(running.turns).toContainEqual(expect.objectContaining({ turnId: begun.turnId, state: "TURN_STATE_RUNNING" }));

      expect(pool.code).toBe(0);
      expect(pool.stdout).toMatch(/^busy\s+1$/m);
      // GetPoolStats answers for every instance's pool (BERTH_ENV_POOL_MAX 64 each), summed.
      const capacity = 64 * server.servers.length;
      expect(pool.stdout).toMatch(new RegExp(`^occupancy\\s+1 of ${capacity}$`, "m"));
      expect(poolJson).toMatchObject({ busy: 1, capacity, coldAcquires: "1" });

      expect(map.code).toBe(0);
      expect(map.stdout).toMatch(/README\.md/);
      expect(map.stdout).toMatch(/index\.ts/);
      expect(mapJson.workspaceMap.status).toMatch(/^MAP_STATUS_(OK|STALE)$/);
    } finally {
      turns.close();
    }
  });
});

describe("reaching the server", { timeout: 120_000 }, () => {
  it("exits 3 naming the URL when nothing listens there", async () => {
    const r = await berth(["repos", "ls", "--server", "http://127.0.0.1:1"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/cannot reach the berth server at http:\/\/127\.0\.0\.1:1 \(ECONNREFUSED\)/);
  });

  it("takes the server from BERTH_SERVER when --server is absent", async () => {
    const ok = await berth(["repos", "ls", "--json"], { BERTH_SERVER: url });
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toHaveProperty("repositories");
    const unreachable = await berth(["pool"], { BERTH_SERVER: "http://127.0.0.1:1" });
    expect(unreachable.code).toBe(3);
    expect(unreachable.stderr).toMatch(/http:\/\/127\.0\.0\.1:1/);
  });

  it("exits 2 for an unknown command or option", async () => {
    expect((await berth(["repos", "frobnicate"])).code).toBe(2);
    expect((await berth(["repos", "ls", "--token", "x"])).code).toBe(2); // tokens only come from BERTH_TOKEN
  });
});
