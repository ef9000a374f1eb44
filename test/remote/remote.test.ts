/**
 * Issue 28 on one instance (PGlite or PostgreSQL): registering a repository on a git server, the
 * server going away and coming back, the background fetch, one mirror's git work serialised,
 * and credentials that never show (refused in a URL; taken from BERTH_GIT_HTTP_HEADER_FILE for
 * an http server that wants a token, and grepped for in logs, events, answers and the database).
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ChangesetState, TurnOutcome, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { TurnService } from "../../gen/berth/v1/turn_service_pb.js";
import type { Event } from "../../gen/berth/v1/event_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { failure } from "../support/rpc-error.js";
import { BASE_FILES, bytes, sha } from "../landing/helpers.js";
import { bareRemote, git, startGitDaemon, startHttpGit, type GitDaemon } from "./helpers.js";

type Client = TestBerth["grpc"];

const open = async (client: Client, repoId: string, intent: string, baseCommit = "main") =>
  (await client.createWorkspace({ repoId, agentId: "agent-a", baseCommit, intent, mode: WorkspaceMode.PERSISTENT })).workspace!;

const approve = async (client: Client, changesetId: string) => {
  for (const to of [ChangesetState.SUBMITTED, ChangesetState.VERIFYING, ChangesetState.APPROVED]) await client.transitionChangeset({ changesetId, toState: to });
};

/** Every row of every table of the database, as text. */
async function databaseText(berth: TestBerth): Promise<string> {
  const db = berth.database.opened.db;
  const tables = await sql<{ table_name: string }>`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`.execute(db);
  const out: string[] = [];
  for (const { table_name } of tables.rows) {
    const rows = await sql<{ t: string }>`SELECT t::text AS t FROM ${sql.table(table_name)} t`.execute(db);
    out.push(...rows.rows.map((r) => r.t));
  }
  // bytea and payloads come out hex-escaped: the secret's hex too.
  return out.join("\n");
}

/** Every event stored so far, through WatchEvents (up to the session.created of a marker session opened last). */
async function allEvents(berth: TestBerth): Promise<Event[]> {
  const marker = (await berth.grpc.registerRepository({ name: `marker-${Date.now()}` })).repository!.id;
  const ws = await open(berth.grpc, marker, "marker", "0000000000000000000000000000000000000001");
  const ac = new AbortController();
  const got: Event[] = [];
  try {
    for await (const m of berth.connect.watchEvents({ afterSeq: 0n }, { signal: ac.signal })) {
      got.push(m.event!);
      if (m.event!.sessionId === ws.sessionId) break;
    }
  } finally {
    ac.abort();
  }
  return got;
}

describe("repositories on a git server, one instance", () => {
  let berth: TestBerth;
  let daemon: GitDaemon;
  /** The background fetch of the instance, run by hand. */
  let tick: (() => Promise<void>) | undefined;
  /** Git work on mirrors in flight, per repository: the most seen at once, and fetches started. */
  const inFlight = new Map<string, number>();
  const most = new Map<string, number>();
  const fetches = new Map<string, number>();
  const base = bareRemote("seed").base;

  beforeAll(async () => {
    daemon = await startGitDaemon(base);
    berth = await startBerth({
      instances: 1,
      mirrorSchedule: () => (run) => {
        tick = run;
        return () => (tick = undefined);
      },
      mirrorProbe: {
        gitStarted: (repoId, op) => {
          const n = (inFlight.get(repoId) ?? 0) + 1;
          inFlight.set(repoId, n);
          most.set(repoId, Math.max(most.get(repoId) ?? 0, n));
          if (op === "fetch") fetches.set(repoId, (fetches.get(repoId) ?? 0) + 1);
        },
        gitEnded: (repoId) => inFlight.set(repoId, (inFlight.get(repoId) ?? 1) - 1),
      },
    });
  }, 60_000);
  afterAll(async () => {
    await berth?.close();
    await daemon?.stop();
  });
  // A test that stops the server and fails half-way leaves it running for the next.
  afterEach(async () => {
    await daemon?.start();
  });

  it("lands a changeset on a file:// remote: committed on berth/<changeset>, merged into the server's main", async () => {
    const remote = bareRemote("plain");
    const repo = (await berth.grpc.registerRepository({ name: "plain", remoteUrl: remote.fileUrl })).repository!;
    expect(repo).toMatchObject({ remoteUrl: remote.fileUrl, sourcePath: "" });
    const ws = await open(berth.grpc, repo.id, "Over file://");
    expect(ws.baseCommit).toBe(remote.base0);
    await berth.grpc.writeFile({ sessionId: ws.sessionId, path: "src/app.ts", content: bytes("export const answer = 42;\n"), expectedHash: sha(BASE_FILES["src/app.ts"]!) });
    const committed = await berth.grpc.commitChangeset({ changesetId: ws.changesetId });
    expect(remote.git("rev-parse", `refs/heads/berth/${ws.changesetId}`)).toBe(committed.commitId);
    await approve(berth.grpc, ws.changesetId);
    const merged = await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED });
    expect(remote.git("rev-parse", "main")).toBe(merged.merge!.newCommitId);
    expect(remote.files("main").get("src/app.ts")).toBe("export const answer = 42;\n");
    // The executable bit of the base survives the round trip through the mirror.
    expect(remote.git("ls-tree", "main", "run.sh").split(" ")[0]).toBe("100755");
  }, 60_000);

  it("resolves base_commit against the server as git would there: a branch, HEAD, refs/heads/…, a tag (over a branch of its name), main~1, an abbreviated id", async () => {
    const remote = bareRemote("names", base);
    const repoId = (await berth.grpc.registerRepository({ name: "names", remoteUrl: daemon.url("names") })).repository!.id;
    const next = remote.push("main", { "README.md": "# next\n" }, "next");
    remote.git("tag", "v1", remote.base0);
    remote.git("update-ref", "refs/heads/dup", next);
    remote.git("tag", "dup", remote.base0);
    const baseOf = async (name: string) => (await open(berth.grpc, repoId, name, name)).baseCommit;
    expect(await baseOf("main")).toBe(next);
    expect(await baseOf("HEAD")).toBe(next);
    expect((await open(berth.grpc, repoId, "default")).baseCommit).toBe(next);
    expect(await baseOf("refs/heads/main")).toBe(next);
    expect(await baseOf("v1")).toBe(remote.base0);
    expect(await baseOf("dup")).toBe(remote.base0);
    expect(await baseOf("main~1")).toBe(remote.base0);
    expect(await baseOf(next.slice(0, 12))).toBe(next);
    expect(await failure(open(berth.grpc, repoId, "nothing", "no-such-branch"))).toMatchObject({ code: "INVALID_ARGUMENT", fields: ["base_commit"] });
  }, 60_000);

  it("a push the server refuses (its pre-receive hook) is REMOTE_REJECTED with its words, and nothing changed in Berth", async () => {
    const remote = bareRemote("hooked", base);
    const repoId = (await berth.grpc.registerRepository({ name: "hooked", remoteUrl: remote.fileUrl })).repository!.id;
    const ws = await open(berth.grpc, repoId, "Refused by a hook");
    await berth.grpc.writeFile({ sessionId: ws.sessionId, path: "hooked.txt", content: bytes("refused\n"), expectedHash: "" });
    writeFileSync(path.join(remote.dir, "hooks", "pre-receive"), "#!/bin/sh\necho 'protected: no pushes today' >&2\nexit 1\n", { mode: 0o755 });
    const f = await failure(berth.grpc.commitChangeset({ changesetId: ws.changesetId }));
    expect(f).toMatchObject({ code: "FAILED_PRECONDITION", reason: "REMOTE_REJECTED", metadata: { changeset_id: ws.changesetId, target_ref: `refs/heads/berth/${ws.changesetId}` } });
    expect(f.metadata.remote_message).toMatch(/pre-receive hook declined/);
    const row = await berth.database.opened.db.selectFrom("changesets").select(["commit_id"]).where("id", "=", ws.changesetId).executeTakeFirstOrThrow();
    expect(row.commit_id).toBeNull();
    expect(remote.git("for-each-ref", "refs/heads/berth")).toBe("");
  }, 60_000);

  it("refuses at registration: both locations, another scheme, the scp-like form, a URL that holds no repository, a server out of reach", async () => {
    const remote = bareRemote("refused", base);
    const both = await failure(berth.grpc.registerRepository({ name: "both", sourcePath: "/tmp", remoteUrl: remote.fileUrl }));
    expect(both).toMatchObject({ code: "INVALID_ARGUMENT", fields: ["remote_url"] });
    expect(both.message).toMatch(/source_path or a remote_url, not both/);
    expect(await failure(berth.grpc.registerRepository({ name: "ftp", remoteUrl: "ftp://127.0.0.1/x.git" }))).toMatchObject({ code: "INVALID_ARGUMENT", fields: ["remote_url"], message: expect.stringMatching(/scheme ftp/) });
    expect(await failure(berth.grpc.registerRepository({ name: "scp", remoteUrl: "git@127.0.0.1:x.git" }))).toMatchObject({ code: "INVALID_ARGUMENT", fields: ["remote_url"], message: expect.stringMatching(/ssh:\/\//) });
    const empty = mkdtempSync(path.join(tmpdir(), "berth-not-a-repo-"));
    for (const url of [`file://${empty}`, daemon.url("no-such-repository")]) {
      const f = await failure(berth.grpc.registerRepository({ name: "nothing-there", remoteUrl: url }));
      expect(f).toMatchObject({ code: "INVALID_ARGUMENT", fields: ["remote_url"] });
      expect(f.message).toMatch(/no git repository there/);
    }
    const other = await startGitDaemon(base);
    await other.stop();
    expect(await failure(berth.grpc.registerRepository({ name: "down", remoteUrl: other.url("refused") }))).toMatchObject({ code: "UNAVAILABLE", reason: "REMOTE_UNREACHABLE", metadata: { operation: "ls-remote" } });
    expect((await berth.grpc.listRepositories({})).repositories.map((r) => r.name)).not.toContain("down");
  }, 60_000);

  it(
    "the git server stopped: UNAVAILABLE REMOTE_UNREACHABLE where the server is needed and nothing changed; reads, writes, diffs and a turn on mirrored commits go on; all works again once it is back, without a restart",
    async () => {
      const remote = bareRemote("outage", base);
      const repoId = (await berth.grpc.registerRepository({ name: "outage", remoteUrl: daemon.url("outage") })).repository!.id;
      const ws = await open(berth.grpc, repoId, "Through the outage");
      await approve(berth.grpc, (await open(berth.grpc, repoId, "approved before")).changesetId);
      await daemon.stop();
      const unreachable = { code: "UNAVAILABLE", reason: "REMOTE_UNREACHABLE", metadata: { repo_id: repoId } };
      const db = berth.database.opened.db;
      const count = async () => Number((await sql<{ n: string }>`SELECT count(*) AS n FROM workspaces WHERE repo_id = ${repoId}::uuid`.execute(db)).rows[0]!.n);
      const before = await count();
      // What needs the server's refs now: refused, nothing written.
      expect(await failure(open(berth.grpc, repoId, "needs the server's main"))).toMatchObject(unreachable);
      expect(await count()).toBe(before);
      expect(await failure(berth.grpc.rebaseWorkspace({ sessionId: ws.sessionId, onto: "main" }))).toMatchObject(unreachable);
      expect(await failure(berth.grpc.registerRepository({ name: "outage-again", remoteUrl: daemon.url("outage") }))).toMatchObject({ code: "UNAVAILABLE", reason: "REMOTE_UNREACHABLE" });
      // Work on what the mirror has goes on: a workspace on a commit id, reads, writes, a diff, a turn.
      const offline = await open(berth.grpc, repoId, "offline", remote.base0);
      expect(offline.baseCommit).toBe(remote.base0);
      expect(Buffer.from((await berth.grpc.readFile({ sessionId: ws.sessionId, path: "README.md" })).content).toString()).toBe(BASE_FILES["README.md"]);
      await berth.grpc.writeFile({ sessionId: ws.sessionId, path: "src/app.ts", content: bytes("export const answer = 42;\n"), expectedHash: sha(BASE_FILES["src/app.ts"]!) });
      expect((await berth.grpc.listFiles({ sessionId: ws.sessionId })).entries.map((f) => f.path)).toContain("src/app.ts");
      expect((await berth.grpc.diffWorkspace({ sessionId: ws.sessionId })).paths.map((p) => p.path)).toEqual(["src/app.ts"]);
      const turns = createClient(TurnService, createConnectTransport({ baseUrl: berth.server.httpUrl, httpVersion: "1.1" }));
      const turn = await turns.beginTurn({ sessionId: ws.sessionId });
      expect(git(turn.environmentPath, "show", "HEAD:notes.txt")).toBe(BASE_FILES["notes.txt"]!.trim());
      writeFileSync(path.join(turn.environmentPath, "offline.txt"), "made offline\n");
      await turns.endTurn({ turnId: turn.turnId, outcome: TurnOutcome.COMPLETED });
      // Landing needs the server: refused, nothing recorded.
      expect(await failure(berth.grpc.commitChangeset({ changesetId: ws.changesetId }))).toMatchObject(unreachable);
      await approve(berth.grpc, ws.changesetId);
      expect(await failure(berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED }))).toMatchObject(unreachable);
      const row = await db.selectFrom("changesets").select(["state", "commit_id"]).where("id", "=", ws.changesetId).executeTakeFirstOrThrow();
      expect(row).toEqual({ state: "approved", commit_id: null });
      expect(remote.git("rev-parse", "main")).toBe(remote.base0);
      // Back: the same calls succeed, no restart.
      await daemon.start();
      const merged = await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED });
      expect(remote.git("rev-parse", "main")).toBe(merged.merge!.newCommitId);
      const files = remote.files("main");
      expect(files.get("src/app.ts")).toBe("export const answer = 42;\n");
      expect(files.get("offline.txt")).toBe("made offline\n");
      expect((await open(berth.grpc, repoId, "after the outage")).baseCommit).toBe(merged.merge!.newCommitId);
    },
    120_000,
  );

  it("the background fetch brings the server's new commits into the mirror, and says once when the server goes and when it comes back", async () => {
    const remote = bareRemote("background", base);
    const repoId = (await berth.grpc.registerRepository({ name: "background", remoteUrl: daemon.url("background") })).repository!.id;
    await open(berth.grpc, repoId, "warm the mirror");
    const newer = remote.push("main", { "README.md": "# newer\n" }, "newer");
    await daemon.stop();
    // Not fetched yet: a workspace on the new commit needs the server.
    expect(await failure(open(berth.grpc, repoId, "on the new commit", newer))).toMatchObject({ code: "UNAVAILABLE", reason: "REMOTE_UNREACHABLE" });
    const warned = () => berth.logs.filter((l) => l.msg === "mirror: background fetch failed" && l.repoId === repoId).length;
    await tick!();
    await tick!();
    expect(warned()).toBe(1);
    await daemon.start();
    await tick!();
    expect(berth.logs.some((l) => l.msg === "mirror: the git server is reachable again" && l.repoId === repoId)).toBe(true);
    await daemon.stop();
    // Fetched in the background: the new commit is there without the server.
    expect((await open(berth.grpc, repoId, "on the new commit", newer)).baseCommit).toBe(newer);
    await daemon.start();
  }, 60_000);

  it("one mirror's fetches and pushes run one at a time within the instance, and a burst of calls shares fetches", async () => {
    bareRemote("burst", base);
    const repoId = (await berth.grpc.registerRepository({ name: "burst", remoteUrl: daemon.url("burst") })).repository!.id;
    const first = await open(berth.grpc, repoId, "first");
    await berth.grpc.writeFile({ sessionId: first.sessionId, path: "burst.txt", content: bytes("burst\n"), expectedHash: "" });
    fetches.set(repoId, 0);
    const calls = 12;
    await Promise.all([
      ...Array.from({ length: calls }, (_, i) => open(berth.grpc, repoId, `burst ${i}`)),
      berth.grpc.commitChangeset({ changesetId: first.changesetId }),
    ]);
    expect(most.get(repoId)).toBe(1);
    expect(fetches.get(repoId)).toBeLessThan(calls);
  }, 60_000);
});

describe("credentials of git servers never show", () => {
  const SECRET = "pw-5ecr3t-9f2b7c";
  const TOKEN = "tok-7c1d9e4a-http-header";
  let berth: TestBerth;
  let http: Awaited<ReturnType<typeof startHttpGit>>;
  const headerFile = path.join(mkdtempSync(path.join(tmpdir(), "berth-header-")), "header");
  const base = bareRemote("secret").base;

  beforeAll(async () => {
    http = await startHttpGit(base, TOKEN);
    writeFileSync(headerFile, "Authorization: Bearer not-the-token\n");
    berth = await startBerth({ env: { BERTH_GIT_HTTP_HEADER_FILE: headerFile } });
  }, 60_000);
  afterAll(async () => {
    await berth?.close();
    await http?.stop();
  });

  it(
    "a URL with credentials is refused naming the field, and the header file's token reaches the http server only: neither is in logs, events, answers or the database",
    async () => {
      const answers: string[] = [];
      const keep = (x: unknown) => answers.push(JSON.stringify(x, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v instanceof Uint8Array ? Buffer.from(v).toString("latin1") : v)));
      for (const url of [`http://berth:${SECRET}@127.0.0.1:1/secret.git`, `https://${SECRET}@127.0.0.1/secret.git`, `git://u:${SECRET}@127.0.0.1/secret.git`, `ssh://git:${SECRET}@127.0.0.1/secret.git`]) {
        const f = await failure(berth.grpc.registerRepository({ name: "with-credentials", remoteUrl: url }));
        expect(f).toMatchObject({ code: "INVALID_ARGUMENT", fields: ["remote_url"] });
        expect(f.message).toMatch(/must not hold credentials/);
        expect(f.message).toContain("***@127.0.0.1");
        keep(f);
      }
      // The header file holds a wrong token: the server refuses it, and Berth says so.
      const denied = await failure(berth.grpc.registerRepository({ name: "secret", remoteUrl: http.url("secret") }));
      expect(denied).toMatchObject({ code: "FAILED_PRECONDITION", reason: "REMOTE_ACCESS_DENIED" });
      keep(denied);
      // The right one, read at the next call (no restart): a changeset's whole life over http.
      writeFileSync(headerFile, `Authorization: Bearer ${TOKEN}\n`);
      const repo = (await berth.grpc.registerRepository({ name: "secret", remoteUrl: http.url("secret") })).repository!;
      keep(repo);
      const ws = await open(berth.grpc, repo.id, "Over http with a token");
      keep(ws);
      keep(await berth.grpc.writeFile({ sessionId: ws.sessionId, path: "src/app.ts", content: bytes("export const answer = 42;\n"), expectedHash: sha(BASE_FILES["src/app.ts"]!) }));
      keep(await berth.grpc.commitChangeset({ changesetId: ws.changesetId }));
      await approve(berth.grpc, ws.changesetId);
      const merged = await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED });
      keep(merged);
      keep(await berth.grpc.listRepositories({}));
      expect(git(path.join(base, "secret.git"), "rev-parse", "main")).toBe(merged.merge!.newCommitId);
      expect(http.seen).toContain(`Bearer ${TOKEN}`);
      const events = await allEvents(berth);
      expect(events.some((e) => e.kind === "changeset.merged")).toBe(true);
      const places = {
        logs: JSON.stringify(berth.logs),
        events: events.map((e) => JSON.stringify(e, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))).join("\n"),
        answers: answers.join("\n"),
        database: await databaseText(berth),
      };
      for (const [where, text] of Object.entries(places)) {
        expect(text.length, where).toBeGreaterThan(0);
        for (const secret of [SECRET, TOKEN, Buffer.from(TOKEN).toString("hex"), Buffer.from(SECRET).toString("hex")]) expect(text.includes(secret), `${secret} in ${where}`).toBe(false);
      }
      expect(places.logs).toContain("REMOTE_ACCESS_DENIED");
    },
    120_000,
  );
});
