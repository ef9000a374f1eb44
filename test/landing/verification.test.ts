/**
 * A repository's check on VERIFYING (issue 29), through a real server on a real git repository:
 * a check that passes moves the changeset SUBMITTED→VERIFYING→APPROVED with its output on
 * WatchEvents; one that fails (or times out) records its output and sends the changeset back to
 * SUBMITTED, never APPROVED; the check runs on the changeset's files in a fresh directory, in
 * berth run's sandbox (the source repository out of sight, no network); only an admin sets a
 * check; a verification left RUNNING by a killed server is finished ERROR by the next one, its
 * changeset back to SUBMITTED, and one whose instance is gone by the sweep of a live instance.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChangesetState, VerificationState } from "../../gen/berth/v1/types_pb.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import type { Event } from "../../gen/berth/v1/event_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { failure } from "../support/rpc-error.js";
import { serve } from "../support/serve-process.js";
import { needs } from "../support/services.js";
import { berth as berthCli, berthJson } from "../cli/helpers.js";
import { gitRepo, registered, write } from "./helpers.js";

type Client = TestBerth["grpc"];

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The changeset's verification once it is no longer RUNNING. */
function finished(client: Client, changesetId: string) {
  return until("the verification finished", async () => {
    const v = (await client.listVerifications({ changesetId })).verifications.at(-1);
    return v && v.state !== VerificationState.RUNNING ? v : undefined;
  });
}

/** The changeset's state as a session of it reads it. */
async function stateOf(client: Client, sessionId: string): Promise<ChangesetState> {
  return (await client.getWorkspace({ sessionId })).workspace!.changesetState;
}

/** The stored verification events of a changeset until (and with) its verification.finished. */
async function verificationEvents(client: Client, repoId: string, changesetId: string): Promise<Event[]> {
  const ac = new AbortController();
  const got: Event[] = [];
  try {
    for await (const m of client.watchEvents({ afterSeq: 0n, repoIds: [repoId], kinds: ["verification.started", "verification.output", "verification.finished"] }, { signal: ac.signal })) {
      if (m.event!.changesetId !== changesetId) continue;
      got.push(m.event!);
      if (m.event!.kind === "verification.finished") break;
    }
  } finally {
    ac.abort();
  }
  return got;
}

/** The verification.output events stored so far for a changeset. */
async function outputEvents(client: Client, repoId: string, changesetId: string): Promise<Event[]> {
  const ac = new AbortController();
  const got: Event[] = [];
  const head = client.watchEvents({ afterSeq: 0n, repoIds: [repoId], kinds: ["verification.output"] }, { signal: ac.signal })[Symbol.asyncIterator]();
  try {
    // Replayed first; a stream idle for a moment has nothing more stored.
    for (;;) {
      const pending = head.next();
      pending.catch(() => {}); // the abort below ends a read still waiting
      const next = await Promise.race([pending, new Promise<"idle">((r) => setTimeout(() => r("idle"), 300))]);
      if (next === "idle" || next.done) break;
      if (next.value.event?.changesetId === changesetId) got.push(next.value.event);
    }
  } finally {
    ac.abort();
  }
  return got;
}

const text = (events: Event[]) => events.flatMap((e) => (e.payload.case === "verificationOutput" ? [new TextDecoder().decode(e.payload.value.chunk)] : [])).join("");

needs({ bwrap: true })("checks on VERIFYING", () => {
  let berth: TestBerth;
  let client: Client;
  let n = 0;

  beforeAll(async () => {
    berth = await startBerth();
    client = berth.grpc;
  }, 120_000);
  afterAll(async () => {
    await berth?.close();
  });

  /** A repository with `check`, a session that added newfile.txt, its changeset SUBMITTED. */
  async function submitted(command: string[] | ((sourceDir: string) => string[]), timeoutSeconds = 60) {
    const repo = gitRepo();
    const argv = typeof command === "function" ? command(repo.dir) : command;
    const { repoId, open } = await registered(client, repo, `verify-${process.pid}-${++n}`);
    const set = await client.setRepositoryCheck({ repositoryId: repoId, check: { argv, timeoutSeconds } });
    expect(set.repository!.check).toMatchObject({ argv, timeoutSeconds });
    const ws = await open("agent-verify");
    await write(client, ws.sessionId, "newfile.txt", "made by the agent\n", null);
    await client.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.SUBMITTED });
    return { repo, repoId, ws };
  }

  it("a passing check moves the changeset to APPROVED, seeing its files and not the source repository, its output on WatchEvents", { timeout: 120_000 }, async () => {
    const { repoId, ws } = await submitted((source) => ["sh", "-c", `test -f newfile.txt && cat newfile.txt && test -f README.md && test ! -e ${source}/README.md && echo checked-ok`]);
    const moved = await client.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.VERIFYING });
    expect(moved.changeset!.state).toBe(ChangesetState.VERIFYING);
    const v = await finished(client, ws.changesetId);
    expect(v.state, v.outputTail).toBe(VerificationState.PASSED);
    expect(v.exitCode).toBe(0);
    expect(v.outputTail).toContain("made by the agent\nchecked-ok");
    expect(v.commitId).toMatch(/^[0-9a-f]{40}$/);
    expect(await stateOf(client, ws.sessionId)).toBe(ChangesetState.APPROVED);
    const events = await verificationEvents(client, repoId, ws.changesetId);
    expect(events[0]!.kind).toBe("verification.started");
    expect(text(events)).toContain("checked-ok");
    const end = events.at(-1)!;
    expect(end.payload.case === "verificationFinished" && end.payload.value.state).toBe(VerificationState.PASSED);
  });

  it("a failing check records its output and sends the changeset back to SUBMITTED, not APPROVED", { timeout: 120_000 }, async () => {
    const { repoId, ws } = await submitted(["sh", "-c", "echo 'test suite: 1 failure' >&2; exit 3"]);
    await client.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.VERIFYING });
    const v = await finished(client, ws.changesetId);
    expect(v.state).toBe(VerificationState.FAILED);
    expect(v.exitCode).toBe(3);
    expect(v.outputTail).toContain("test suite: 1 failure");
    expect(await stateOf(client, ws.sessionId)).toBe(ChangesetState.SUBMITTED);
    const events = await verificationEvents(client, repoId, ws.changesetId);
    expect(text(events)).toContain("1 failure");
    // Sent back, it can be verified again: the second run is a verification of its own.
    await client.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.VERIFYING });
    await until("the second run finished", async () => {
      const all = (await client.listVerifications({ changesetId: ws.changesetId })).verifications;
      return all.length === 2 && all[1]!.state !== VerificationState.RUNNING ? all : undefined;
    });
    expect(await stateOf(client, ws.sessionId)).toBe(ChangesetState.SUBMITTED);
  });

  it("kills a check at its timeout, whatever it forked, and fails it", { timeout: 120_000 }, async () => {
    const started = Date.now();
    // A duration no other process here sleeps, to find the check's processes by.
    const seconds = String(3000 + (process.pid % 1000));
    const { ws } = await submitted(["sh", "-c", `echo started; sleep ${seconds} & sleep ${seconds}`], 1);
    await client.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.VERIFYING });
    const v = await finished(client, ws.changesetId);
    expect(v.state).toBe(VerificationState.FAILED);
    expect(v.reason).toBe("timeout after 1s");
    expect(v.exitCode).toBeUndefined();
    expect(v.outputTail).toContain("started");
    expect(Date.now() - started).toBeLessThan(60_000);
    expect(await stateOf(client, ws.sessionId)).toBe(ChangesetState.SUBMITTED);
    // Nothing it started outlives it, the sleep in the background included.
    await until("the check's processes are gone", async () => (execFileSync("ps", ["-eo", "args"], { encoding: "utf8" }).split("\n").some((l) => l.trim() === `sleep ${seconds}`) ? undefined : true), 10_000);
  });

  it("runs without network: the check sees no interface but loopback", { timeout: 120_000 }, async () => {
    const { ws } = await submitted(["sh", "-c", "ip -o link 2>/dev/null | grep -v ' lo:' | grep -q . && exit 1; cat /proc/net/dev | grep -qv 'lo:\\|Inter\\|face' && exit 1; exit 0"]);
    await client.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.VERIFYING });
    const v = await finished(client, ws.changesetId);
    expect(v.state, v.outputTail).toBe(VerificationState.PASSED);
  });

  it("leaves VERIFYING a state only, as before, for a repository without a check; a check cleared is gone", { timeout: 60_000 }, async () => {
    const { repoId, ws } = await submitted(["true"]);
    const cleared = await client.setRepositoryCheck({ repositoryId: repoId });
    expect(cleared.repository!.check).toBeUndefined();
    await client.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.VERIFYING });
    expect((await client.listVerifications({ changesetId: ws.changesetId })).verifications).toEqual([]);
    expect(await stateOf(client, ws.sessionId)).toBe(ChangesetState.VERIFYING);
  });

  it("sets and clears a check from the CLI (berth repos check R -- argv…, --clear) and lists a changeset's runs with their output (berth changeset checks)", { timeout: 120_000 }, async () => {
    const url = berth.server.httpUrl;
    const repo = gitRepo();
    const name = `verify-cli-${process.pid}`;
    const { open } = await registered(client, repo, name);
    // --json before --: after it, everything is the check's.
    const setRun = await berthCli(["repos", "check", name, "--server", url, "--timeout", "30", "--json", "--", "sh", "-c", "echo from-the-cli; exit 1"]);
    expect(setRun.code, setRun.stderr).toBe(0);
    const set = JSON.parse(setRun.stdout) as { repository: { check: { argv: string[]; timeoutSeconds: number } } };
    expect(set.repository.check).toEqual({ argv: ["sh", "-c", "echo from-the-cli; exit 1"], timeoutSeconds: 30 });
    const ws = await open("agent-verify");
    await write(client, ws.sessionId, "newfile.txt", "x\n", null);
    await berthJson(["changeset", "transition", ws.changesetId, "submitted", "--server", url]);
    await berthJson(["changeset", "transition", ws.changesetId, "verifying", "--server", url]);
    await finished(client, ws.changesetId);
    const shown = await berthCli(["changeset", "checks", ws.changesetId, "--server", url]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/failed\s+exit 1/);
    expect(shown.stdout).toContain("from-the-cli");
    const cleared = await berthJson<{ repository: { check?: unknown } }>(["repos", "check", name, "--clear", "--server", url]);
    expect(cleared.repository.check).toBeUndefined();
    const neither = await berthCli(["repos", "check", name, "--server", url]);
    expect(neither.code).not.toBe(0);
    expect(neither.stderr).toMatch(/after --/);
  });

  it("refuses a check with no program argument or an out-of-range timeout, naming the field", async () => {
    const repoId = (await client.registerRepository({ name: `verify-bad-${process.pid}` })).repository!.id;
    const err = await failure(client.setRepositoryCheck({ repositoryId: repoId, check: { argv: ["sh", ""], timeoutSeconds: 100_000 } }));
    expect(err.code).toBe("INVALID_ARGUMENT");
    expect(err.fields).toEqual(expect.arrayContaining(["check.argv[1]", "check.timeout_seconds"]));
  });
});

describe("who sets a check", () => {
  let berth: TestBerth;
  const sha = (t: string) => createHash("sha256").update(t).digest("hex");
  const AGENT = "a".repeat(40);
  const ADMIN = "b".repeat(40);

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "berth-verify-auth-"));
    const file = path.join(dir, "tokens.json");
    writeFileSync(file, JSON.stringify({ tokens: [{ sha256: sha(AGENT), agent_id: "alice", roles: ["agent"], repos: ["*"] }, { sha256: sha(ADMIN), agent_id: "ops", roles: ["agent", "admin"] }] }));
    berth = await startBerth({ env: { BERTH_AUTH: "token", BERTH_AUTH_TOKENS_FILE: file } });
  }, 120_000);
  afterAll(async () => {
    await berth?.close();
  });

  it("refuses an agent's SetRepositoryCheck with PERMISSION_DENIED ROLE_REQUIRED, and takes an admin's", async () => {
    const as = (token: string) => createGrpcClient(WorkspaceService, berth.server.grpcAddress, { metadata: { authorization: `Bearer ${token}` } });
    const admin = as(ADMIN);
    const repoId = (await admin.registerRepository({ name: "checked", sourcePath: gitRepo().dir })).repository!.id;
    const err = await failure(as(AGENT).setRepositoryCheck({ repositoryId: repoId, check: { argv: ["sh", "-c", "curl evil"] } }));
    expect(err.code).toBe("PERMISSION_DENIED");
    expect(err.reason).toBe("ROLE_REQUIRED");
    const listed = await as(AGENT).listRepositories({});
    expect(listed.repositories.find((r) => r.id === repoId)!.check).toBeUndefined();
    const set = await admin.setRepositoryCheck({ repositoryId: repoId, check: { argv: ["true"] } });
    expect(set.repository!.check).toMatchObject({ argv: ["true"], timeoutSeconds: 600 });
  });
});

needs({ postgres: true, bwrap: true })("a server killed during a check", () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase("postgres");
  }, 60_000);
  afterAll(async () => {
    await database?.drop();
  });

  it("finishes the RUNNING verification as ERROR at the next start and sends the changeset back to SUBMITTED, with verification.finished", { timeout: 240_000 }, async () => {
    const env = { DATABASE_URL: database.url!, BERTH_INSTANCE_NAME: "verify-killed" };
    const first = await serve(env);
    const c1 = createGrpcClient(WorkspaceService, first.grpc);
    const repo = gitRepo();
    const { repoId, open } = await registered(c1, repo, "verify-killed");
    await c1.setRepositoryCheck({ repositoryId: repoId, check: { argv: ["sh", "-c", "echo running; sleep 600"], timeoutSeconds: 3600 } });
    const ws = await open("agent-verify");
    await write(c1, ws.sessionId, "newfile.txt", "x\n", null);
    await c1.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.SUBMITTED });
    await c1.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.VERIFYING });
    // Killed once the check is running (its output streamed).
    await until("the check's output was streamed", async () => {
      const ac = new AbortController();
      try {
        for await (const m of c1.watchEvents({ afterSeq: 0n, repoIds: [repoId], kinds: ["verification.output"] }, { signal: ac.signal })) if (m.event) return true;
      } finally {
        ac.abort();
      }
      return undefined;
    });
    first.child.kill("SIGKILL");
    await first.exited;

    const second = await serve(env);
    try {
      const c2 = createGrpcClient(WorkspaceService, second.grpc);
      const v = await finished(c2, ws.changesetId);
      expect(v.state).toBe(VerificationState.ERROR);
      expect(v.reason).toBe("instance_lost");
      expect(v.outputTail).toBe("");
      const events = await verificationEvents(c2, repoId, ws.changesetId);
      const end = events.at(-1)!;
      expect(end.payload.case === "verificationFinished" && end.payload.value.state).toBe(VerificationState.ERROR);
      expect(text(events)).toContain("running");
      // Out of VERIFYING (its session, stranded by the restart, reads the changeset's row).
      expect(await stateOf(c2, ws.sessionId)).toBe(ChangesetState.SUBMITTED);
    } finally {
      second.child.kill("SIGKILL");
    }
  });
});

needs({ postgres: true, bwrap: true })("a check whose instance dies while the other lives", () => {
  let berth: TestBerth;
  beforeAll(async () => {
    berth = await startBerth({ instances: 2, kind: "postgres" });
  }, 120_000);
  afterAll(async () => {
    await berth?.close();
  });

  it("is finished ERROR (instance_lost) by the live instance's sweep, its changeset back to SUBMITTED, while the dead one's late end changes nothing", { timeout: 180_000 }, async () => {
    const client = berth.grpc;
    const repo = gitRepo();
    const { repoId, open } = await registered(client, repo, `verify-sweep-${process.pid}`);
    await client.setRepositoryCheck({ repositoryId: repoId, check: { argv: ["sh", "-c", "sleep 5; echo late; exit 0"], timeoutSeconds: 60 } });
    const ws = await open("agent-verify");
    await write(client, ws.sessionId, "newfile.txt", "x\n", null);
    await client.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.SUBMITTED });
    await client.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.VERIFYING });
    // The instance running it is declared gone (as its silence would, by the database's clock).
    const db = berth.database.opened.db;
    const running = await sql<{ instance_id: string }>`SELECT instance_id FROM verifications WHERE changeset_id = ${ws.changesetId}::uuid AND state = 'running'`.execute(db);
    expect(running.rows).toHaveLength(1);
    await sql`UPDATE instances SET stopped_at = now() WHERE id = ${running.rows[0]!.instance_id}::uuid`.execute(db);
    const v = await finished(client, ws.changesetId);
    expect(v.state).toBe(VerificationState.ERROR);
    expect(v.reason).toBe("instance_lost");
    expect(await stateOf(client, ws.sessionId)).toBe(ChangesetState.SUBMITTED);
    // The check itself still ends (exit 0) on its instance: too late, it approves nothing. Its
    // instance says so once its end is refused.
    const refused = (l: Record<string, unknown>) => l["verificationId"] !== undefined && String(l["msg"]).includes("its end is not recorded");
    await until("the late end is refused", async () => (berth.logs.some(refused) ? true : undefined), 30_000);
    expect(berth.logs.find(refused)).toMatchObject({ changesetId: ws.changesetId, outcome: "passed" });
    expect(text(await outputEvents(client, repoId, ws.changesetId))).toContain("late");
    const after = (await client.listVerifications({ changesetId: ws.changesetId })).verifications;
    expect(after.map((x) => [x.state, x.reason])).toEqual([[VerificationState.ERROR, "instance_lost"]]);
    expect(await stateOf(client, ws.sessionId)).toBe(ChangesetState.SUBMITTED);
  });
});
