/**
 * @berth/client against a real server: retries of idempotent calls only, the default deadline,
 * and events() resuming after a dropped connection without a duplicate or a gap. The failures
 * are real connections cut by a TCP relay between the client and the server (the server itself
 * cannot be made to drop one connection on cue).
 */
import net from "node:net";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Code, ConnectError, createBerthClient, isIdempotent, TurnService, WorkspaceService, type Event } from "@berth/client";
import { startBerth, type TestBerth } from "../support/berth.js";

/** A TCP relay to the server that can refuse the next connections and cut the open ones. */
class Relay {
  private readonly server: net.Server;
  private readonly open = new Set<net.Socket>();
  dropNext = 0;
  accepted = 0;

  constructor(target: URL) {
    this.server = net.createServer((client) => {
      this.accepted++;
      if (this.dropNext > 0) {
        this.dropNext--;
        client.destroy();
        return;
      }
      const upstream = net.connect(Number(target.port), target.hostname);
      for (const s of [client, upstream]) {
        this.open.add(s);
        s.on("close", () => this.open.delete(s));
        s.on("error", () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  cutAll(): void {
    for (const s of this.open) s.destroy();
  }

  async close(): Promise<void> {
    this.cutAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

let server: TestBerth;
let relay: Relay;
let relayUrl: string;

beforeAll(async () => {
  server = await startBerth();
});
// A relay of its own per test: a new port, so no test reuses another's pooled keep-alive connections.
beforeEach(async () => {
  relay = new Relay(new URL(server.server.httpUrl));
  relayUrl = await relay.listen();
});
afterEach(async () => {
  await relay.close();
});
afterAll(async () => {
  await server?.close();
});

const fast = { initialMs: 20, maxMs: 50 };

describe("@berth/client retries", { timeout: 60_000 }, () => {
  it("sends an idempotent call again after a dropped connection", async () => {
    const client = createBerthClient({ baseUrl: relayUrl, retry: fast });
    relay.dropNext = 2;
    const before = relay.accepted;
    const res = await client.workspaces.listRepositories({});
    expect(res.repositories).toBeDefined();
    expect(relay.accepted - before).toBe(3);
  });

  it("does not send a non-idempotent call again: RegisterRepository fails once and registers nothing", async () => {
    const client = createBerthClient({ baseUrl: relayUrl, retry: fast });
    relay.dropNext = 1;
    const before = relay.accepted;
    const name = `not-retried-${process.pid}`;
    const err = await client.workspaces.registerRepository({ name }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect(relay.accepted - before).toBe(1);
    const { repositories } = await client.workspaces.listRepositories({});
    expect(repositories.map((r) => r.name)).not.toContain(name);
  });

  it("gives up after maxAttempts", async () => {
    const client = createBerthClient({ baseUrl: relayUrl, retry: { ...fast, maxAttempts: 2 } });
    relay.dropNext = 5;
    const before = relay.accepted;
    await expect(client.workspaces.listRepositories({})).rejects.toBeInstanceOf(ConnectError);
    expect(relay.accepted - before).toBe(2);
  });

  it("decides idempotency from the method, and BeginTurn from its client_turn_id", () => {
    const m = (service: typeof WorkspaceService | typeof TurnService, name: string) => service.methods.find((x) => x.name === name)!;
    expect(isIdempotent(m(WorkspaceService, "GetWorkspace"), {})).toBe(true);
    expect(isIdempotent(m(WorkspaceService, "CreateWorkspace"), {})).toBe(false);
    expect(isIdempotent(m(WorkspaceService, "WriteFile"), {})).toBe(false);
    expect(isIdempotent(m(TurnService, "BeginTurn"), { clientTurnId: "" })).toBe(false);
    expect(isIdempotent(m(TurnService, "BeginTurn"), { clientTurnId: "t-1" })).toBe(true);
  });
});

describe("@berth/client deadlines", { timeout: 60_000 }, () => {
  it("gives unary calls the default deadline, which a call may override", async () => {
    const client = createBerthClient({ baseUrl: server.server.httpUrl, timeoutMs: 1 });
    const err = await client.workspaces.listRepositories({}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.DeadlineExceeded);
    await expect(client.workspaces.listRepositories({}, { timeoutMs: 30_000 })).resolves.toBeDefined();
  });
});

describe("@berth/client events()", { timeout: 60_000 }, () => {
  it("resumes after a cut connection from the last seq it yielded: no duplicate, no gap", async () => {
    const client = createBerthClient({ baseUrl: relayUrl, retry: fast });
    const { repository } = await server.grpc.registerRepository({ name: `events-${process.pid}` });
    const repoId = repository!.id;
    const create = (agentId: string) => server.grpc.createWorkspace({ repoId, baseCommit: "main", mode: 2, agentId });
    await create("a1");

    const abort = new AbortController();
    const reconnects: bigint[] = [];
    const seen: Event[] = [];
    const iterator = client.events({ afterSeq: 0n, repoIds: [repoId] }, { signal: abort.signal, ...fast, onReconnect: (r) => reconnects.push(r.afterSeq) });
    for await (const event of iterator) {
      seen.push(event);
      if (seen.length === 1) {
        relay.cutAll();
        await create("a2");
      }
      if (seen.length === 2) break;
    }
    abort.abort();
    expect(seen.map((e) => e.kind)).toEqual(["session.created", "session.created"]);
    expect(seen[1]!.seq).toBeGreaterThan(seen[0]!.seq);
    // Every reconnect (a pooled connection the relay cut may fail once more) asks for what follows the first event.
    expect(reconnects.length).toBeGreaterThan(0);
    expect(new Set(reconnects)).toEqual(new Set([seen[0]!.seq]));
  });

  it("throws when the first stream is refused, rather than retrying a bad request", async () => {
    const client = createBerthClient({ baseUrl: server.server.httpUrl });
    const iterator = client.events({ repoIds: ["not-a-uuid"] });
    await expect(iterator.next()).rejects.toMatchObject({ code: Code.InvalidArgument });
  });
});
