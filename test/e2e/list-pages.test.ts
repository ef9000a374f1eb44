/**
 * Pages of the List RPCs (issue 17): ListRepositories, ListSessions and ListTurns through the real
 * server. Pages concatenate to the whole list, entries created while paging neither shift nor
 * repeat a page, tokens are checked, and a non-admin's pages hold only its granted repositories.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LifecycleState, TurnOutcome, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { failure } from "../support/rpc-error.js";
import { newSession, startTurnBerth, type TurnBerth } from "../turns/helpers.js";

/** Every page of a list, `size` at a time: the entries in order and how many pages it took. */
async function allPages<T>(size: number, page: (token: string) => Promise<{ items: T[]; nextPageToken: string }>): Promise<{ items: T[]; pages: number }> {
  const items: T[] = [];
  let token = "";
  let pages = 0;
  do {
    const r = await page(token);
    expect(r.items.length).toBeLessThanOrEqual(size);
    items.push(...r.items);
    token = r.nextPageToken;
    pages++;
  } while (token !== "");
  return { items, pages };
}

describe("ListSessions pages", () => {
  let berth: TestBerth;
  let repoId: string;
  const sessions = (token: string, size = 3, states: LifecycleState[] = []) =>
    berth.grpc.listSessions({ repoId, pageSize: size, pageToken: token, states }).then((r) => ({ items: r.sessions, nextPageToken: r.nextPageToken }));
  const create = async (i: number) =>
    (await berth.grpc.createWorkspace({ repoId, mode: WorkspaceMode.EPHEMERAL, agentId: `claude-${i}`, intent: `task ${i}`, baseCommit: "main" })).workspace!;

  beforeAll(async () => {
    berth = await startBerth();
    repoId = (await berth.grpc.registerRepository({ name: "pages" })).repository!.id;
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("gives pages that concatenate to the whole list, oldest first, with what the console shows of each session", async () => {
    const made = [];
    for (let i = 0; i < 8; i++) made.push(await create(i));
    const whole = await berth.grpc.listSessions({ repoId });
    expect(whole.nextPageToken).toBe("");
    expect(whole.sessions.map((s) => s.sessionId)).toEqual(made.map((w) => w.sessionId));
    expect(whole.sessions[2]).toMatchObject({ agentId: "claude-2", intent: "task 2", changesetId: made[2]!.changesetId, baseCommit: "main", lifecycleState: LifecycleState.ACTIVE });
    expect(whole.sessions[2]!.lastActiveAt).toBeDefined();
    const { items, pages } = await allPages(3, (t) => sessions(t));
    expect(items.map((s) => s.sessionId)).toEqual(made.map((w) => w.sessionId));
    expect(pages).toBe(3);
  });

  it("neither repeats nor skips a session when others are created, stranded or resumed while paging", async () => {
    const first = await sessions("");
    const seen = first.items.map((s) => s.workspaceId);
    // Between pages: a session of the first page is stranded and resumed, a new one created.
    await berth.grpc.strandSession({ sessionId: first.items[0]!.sessionId, reason: "test" });
    await berth.grpc.resumeSession({ deadSessionId: first.items[0]!.sessionId, agentId: first.items[0]!.agentId });
    const late = await create(99);
    const rest = await allPages(3, (t) => sessions(t === "" ? first.nextPageToken : t));
    const all = [...seen, ...rest.items.map((s) => s.workspaceId)];
    expect(new Set(all).size).toBe(all.length);
    expect(all.at(-1)).toBe(late.workspaceId);
    expect(all).toEqual((await berth.grpc.listSessions({ repoId })).sessions.map((s) => s.workspaceId));
  });

  it("lists sessions by state: stranded and abandoned ones on request, active and stranded by default", async () => {
    const a = await create(200);
    const b = await create(201);
    await berth.grpc.strandSession({ sessionId: a.sessionId, reason: "gone to lunch" });
    await berth.grpc.abandonSession({ sessionId: b.sessionId, reason: "not needed" });
    const stranded = (await berth.grpc.listSessions({ repoId, states: [LifecycleState.STRANDED] })).sessions;
    expect(stranded.map((s) => s.sessionId)).toEqual([a.sessionId]);
    expect(stranded[0]).toMatchObject({ lifecycleState: LifecycleState.STRANDED, lifecycleReason: "gone to lunch" });
    expect(stranded[0]!.strandedAt).toBeDefined();
    const abandoned = (await berth.grpc.listSessions({ repoId, states: [LifecycleState.ABANDONED] })).sessions;
    expect(abandoned.map((s) => [s.sessionId, s.lifecycleState])).toEqual([[b.sessionId, LifecycleState.ABANDONED]]);
    const byDefault = (await berth.grpc.listSessions({ repoId })).sessions.map((s) => s.sessionId);
    expect(byDefault).toContain(a.sessionId);
    expect(byDefault).not.toContain(b.sessionId);
    const both = await allPages(2, (t) => sessions(t, 2, [LifecycleState.STRANDED, LifecycleState.ABANDONED]));
    expect(both.items.map((s) => s.sessionId)).toEqual((await berth.grpc.listSessions({ repoId, states: [LifecycleState.ABANDONED, LifecycleState.STRANDED] })).sessions.map((s) => s.sessionId));
    expect(both.items.map((s) => s.sessionId)).toEqual(expect.arrayContaining([a.sessionId, b.sessionId]));
  });

  it("refuses a forged or foreign page token, a page_size over the maximum and an unlistable state, naming the field", async () => {
    const bad = async (req: Parameters<typeof berth.grpc.listSessions>[0], field: string) => {
      const f = await failure(berth.grpc.listSessions(req));
      expect(f.code).toBe("INVALID_ARGUMENT");
      expect(f.fields).toEqual([field]);
      return f;
    };
    await bad({ repoId, pageToken: "!!" }, "page_token");
    await bad({ repoId, pageToken: Buffer.from('["sessions",1,2]').toString("base64url") }, "page_token");
    // A real token of another list.
    const repos = await berth.grpc.listRepositories({ pageSize: 1 });
    await berth.grpc.registerRepository({ name: "pages-second" });
    const reposAgain = await berth.grpc.listRepositories({ pageSize: 1 });
    const foreign = repos.nextPageToken || reposAgain.nextPageToken;
    expect(foreign).not.toBe("");
    await bad({ repoId, pageToken: foreign }, "page_token");
    expect((await bad({ repoId, pageSize: 1001 }, "page_size")).message).toContain("between 1 and 1000");
    expect((await bad({ repoId, states: [LifecycleState.DESTROYED] }, "states[0]")).message).toContain("LIFECYCLE_STATE_STRANDED");
  });
});

describe("ListRepositories pages", () => {
  const sha = (t: string) => createHash("sha256").update(t).digest("hex");
  const TOKENS = { some: randomBytes(16).toString("hex"), ops: randomBytes(16).toString("hex") };
  let berth: TestBerth;
  const as = (who: keyof typeof TOKENS) => createGrpcClient(WorkspaceService, berth.server.grpcAddress, { metadata: { authorization: `Bearer ${TOKENS[who]}` } });
  const names = Array.from({ length: 9 }, (_, i) => `repo-${String(i).padStart(2, "0")}`);
  const granted = ["repo-01", "repo-04", "repo-05", "repo-08"];

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "berth-pages-"));
    const file = path.join(dir, "tokens.json");
    writeFileSync(file, JSON.stringify({
      tokens: [
        { sha256: sha(TOKENS.some), agent_id: "some", repos: granted },
        { sha256: sha(TOKENS.ops), agent_id: "ops", roles: ["agent", "admin"] },
      ],
    }));
    berth = await startBerth({ env: { BERTH_AUTH: "token", BERTH_AUTH_TOKENS_FILE: file, BERTH_ENV_ROOT: path.join(dir, "envs") } });
    // Registered out of name order: pages are by name.
    for (const n of [...names].reverse()) await as("ops").registerRepository({ name: n });
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("pages every repository by name for an admin, and full pages of its granted ones for anyone else", async () => {
    const ops = as("ops");
    const all = await allPages(4, (t) => ops.listRepositories({ pageSize: 4, pageToken: t }).then((r) => ({ items: r.repositories.map((x) => x.name), nextPageToken: r.nextPageToken })));
    expect(all.items).toEqual(names);
    expect(all.pages).toBe(3);
    const some = as("some");
    const mine = await allPages(2, (t) => some.listRepositories({ pageSize: 2, pageToken: t }).then((r) => ({ items: r.repositories.map((x) => x.name), nextPageToken: r.nextPageToken })));
    expect(mine).toEqual({ items: granted, pages: 2 });
    expect((await some.listRepositories({})).repositories.map((r) => r.name)).toEqual(granted);
    expect((await failure(some.listRepositories({ pageToken: "eyJ4Ijox" }))).fields).toEqual(["page_token"]);
  });
});

describe("ListTurns pages", () => {
  let b: TurnBerth;
  beforeAll(async () => {
    b = await startTurnBerth();
  });
  afterAll(async () => {
    await b?.close();
  });

  it("pages a session's turns newest first, and the running turns of the server by the same key", async () => {
    const { sessionId } = await newSession(b, undefined);
    const ids: string[] = [];
    // Each BeginTurn supersedes the one before: five rows without ending each.
    for (let i = 0; i < 5; i++) ids.push((await b.turns.beginTurn({ sessionId })).turnId);
    const whole = await b.turns.listTurns({ sessionId });
    expect(whole.turns.map((t) => t.turnId)).toEqual([...ids].reverse());
    const paged = await allPages(2, (t) => b.turns.listTurns({ sessionId, pageSize: 2, pageToken: t }).then((r) => ({ items: r.turns.map((x) => x.turnId), nextPageToken: r.nextPageToken })));
    expect(paged).toEqual({ items: [...ids].reverse(), pages: 3 });
    // Without a session, ListTurns lists the running turns of the instance it reaches (its
    // contract); the clients go round robin, so one call per instance reaches each once.
    const answers = await Promise.all(b.servers.map(() => b.turns.listTurns({ pageSize: 1 })));
    expect(answers.flatMap((r) => r.turns.map((t) => t.turnId))).toEqual([ids[4]]);
    expect(answers.map((r) => r.nextPageToken)).toEqual(b.servers.map(() => ""));
    const f = await failure(b.turns.listTurns({ sessionId, pageToken: "x" }));
    expect(f).toMatchObject({ code: "INVALID_ARGUMENT", fields: ["page_token"] });
    expect((await failure(b.turns.listTurns({ sessionId, pageSize: 5000 }))).fields).toEqual(["page_size"]);
    await b.turns.endTurn({ turnId: ids[4]!, outcome: TurnOutcome.COMPLETED });
  });
});

describe("ListClaims pages", () => {
  let berth: TestBerth;
  beforeAll(async () => {
    berth = await startBerth();
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("lists a session's claims by path and symbol, in pages, and none once it is stranded", async () => {
    const repoId = (await berth.grpc.registerRepository({ name: "claims-pages" })).repository!.id;
    const { workspace } = await berth.grpc.createWorkspace({ repoId, mode: WorkspaceMode.EPHEMERAL, agentId: "claude-1", baseCommit: "main" });
    const sessionId = workspace!.sessionId;
    const wanted = [["b.ts", "beta"], ["a.ts", "zeta"], ["a.ts", "alpha"], ["c.ts", "gamma"], ["a.ts", "mu"]] as const;
    // Named symbols must exist in the workspace's files (SYMBOL_NOT_FOUND otherwise): write them first.
    for (const file of ["a.ts", "b.ts", "c.ts"]) {
      const fns = wanted.filter(([p]) => p === file).map(([, s]) => `export function ${s}(): number {\n  return 1;\n}\n`);
      await berth.grpc.writeFile({ sessionId, path: file, content: new TextEncoder().encode(fns.join("\n")) });
    }
    await berth.grpc.claimSymbols({ sessionId, symbols: wanted.map(([path, symbol]) => ({ path, symbol })) });
    const sorted = [...wanted].map(([p, s]) => `${p}#${s}`).sort();
    const whole = await berth.grpc.listClaims({ sessionId });
    expect(whole.claims.map((c) => `${c.path}#${c.symbol}`)).toEqual(sorted);
    expect(whole.claims[0]).toMatchObject({ sessionId, agentId: "claude-1", repoId });
    const paged = await allPages(2, (t) => berth.grpc.listClaims({ sessionId, pageSize: 2, pageToken: t }).then((r) => ({ items: r.claims.map((c) => `${c.path}#${c.symbol}`), nextPageToken: r.nextPageToken })));
    expect(paged).toEqual({ items: sorted, pages: 3 });
    expect((await failure(berth.grpc.listClaims({ sessionId, pageToken: "abc" }))).fields).toEqual(["page_token"]);
    await berth.grpc.strandSession({ sessionId });
    expect((await berth.grpc.listClaims({ sessionId })).claims).toEqual([]);
  });
});
