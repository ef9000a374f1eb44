/**
 * The NATS relay against a real nats-server (our own, on a free port, so it can be stopped and
 * started) and real PostgreSQL: a durable JetStream consumer sees every event exactly once, in
 * seq order — through a scripted lifecycle, a NATS outage, a relay killed mid-batch, and a
 * leader handover.
 */
import { spawn } from "node:child_process";
import { fromBinary, fromJsonString } from "@bufbuild/protobuf";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterEach, beforeEach, expect, it } from "vitest";
import { EventSchema } from "../../gen/berth/v1/event_pb.js";
import { NatsRelay, leaderLockFor, type NatsRelayOptions } from "../../src/delivery/nats-relay.js";
import { headSeq, readRelayCursor } from "../../src/delivery/event-store.js";
import type { WorkspaceRegistry } from "../../src/sessions/registry.js";
import { DEFAULT_SETTINGS, LifecycleManager } from "../../src/sessions/lifecycle.js";
import { systemClock } from "../../src/platform/clock.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { needs } from "../support/services.js";
import { pino } from "pino";
import { NatsServer, input, registryOn, silent, storedIds, storedSeqs, until, writeEvents } from "./helpers.js";

const STREAM = "BERTH_EVENTS";

interface Received {
  subject: string;
  seq: bigint;
  id: string;
  kind: string;
  contentType: string;
  data: Uint8Array;
}

/** Reads a durable consumer until `expected` messages arrived, then checks nothing more comes. */
async function consume(nc: NatsConnection, durable: string, expected: number, timeoutMs = 20_000): Promise<Received[]> {
  const jsm = await jetstreamManager(nc);
  await jsm.consumers.add(STREAM, { durable_name: durable, ack_policy: AckPolicy.Explicit }).catch(() => {});
  const c = await jetstream(nc).consumers.get(STREAM, durable);
  const out: Received[] = [];
  const end = Date.now() + timeoutMs;
  while (out.length < expected && Date.now() < end) {
    const m = await c.next({ expires: 1000 });
    if (!m) continue;
    out.push({
      subject: m.subject,
      seq: BigInt(m.headers!.get("berth-seq")),
      id: m.headers!.get("Nats-Msg-Id"),
      kind: m.headers!.get("berth-kind"),
      contentType: m.headers!.get("content-type"),
      data: m.data,
    });
    m.ack();
  }
  const extra = await c.next({ expires: 1000 });
  if (extra) out.push({ subject: extra.subject, seq: BigInt(extra.headers!.get("berth-seq")), id: "", kind: "", contentType: "", data: extra.data });
  return out;
}

// A second process and a second relay on the same database, and PostgreSQL's advisory lock.
needs({ postgres: true, natsServer: true })("NATS relay (real nats-server)", () => {
  let nats: NatsServer;
  let database: TestDatabase;
  let registry: WorkspaceRegistry;
  const relays: NatsRelay[] = [];
  let nc: NatsConnection | undefined;
  /** What the relays logged in this test (info and up), each line tagged with its relay's index: a failure's context. */
  let logged: string[] = [];
  const relayLog = (): string => `the relays' log:\n${logged.join("")}`;

  function relay(extra: Partial<NatsRelayOptions> = {}): NatsRelay {
    const r = new NatsRelay({
      db: database.opened.db,
      logger: pino({ level: "info", base: { relay: relays.length } }, { write: (line: string) => void logged.push(line) }),
      natsUrl: nats.url,
      stream: STREAM,
      encoding: "binary",
      retentionSeconds: 3600,
      leader: leaderLockFor(database.opened.db, database.kind, STREAM),
      pollIntervalMs: 100,
      leaderIntervalMs: 200,
      publishTimeoutMs: 1000,
      backoffMaxMs: 500,
      ...extra,
    });
    relays.push(r);
    r.start();
    return r;
  }

  async function client(): Promise<NatsConnection> {
    nc ??= await connect({ servers: nats.url });
    return nc;
  }

  async function expectExactlyOnceInOrder(durable: string): Promise<Received[]> {
    const ids = await storedIds(database.opened.db);
    const seqs = await storedSeqs(database.opened.db);
    const got = await consume(await client(), durable, ids.length);
    expect(got.map((m) => m.seq)).toEqual(seqs);
    expect(got.map((m) => m.id)).toEqual(ids);
    return got;
  }

  beforeEach(async () => {
    logged = [];
    nats = await NatsServer.launch();
    database = await createTestDatabase("postgres");
    registry = registryOn(database.opened.db, () => relays.forEach((r) => r.nudge()));
  });
  afterEach(async () => {
    await nc?.close().catch(() => {});
    nc = undefined;
    for (const r of relays.splice(0)) await r.stop();
    await database.drop();
    await nats.destroy();
  });

  it("delivers a scripted lifecycle to a durable consumer exactly once, in order, with subject, headers and payload", async () => {
    const r = relay();
    const repo = await registry.registerRepository("relay-repo", {});
    const ws = await registry.createWorkspace({
      repoId: repo.id, intent: "relay", baseCommit: "abc", mode: "ephemeral", ttlSeconds: undefined,
      agentId: "agent-x", agentName: undefined, sessionId: undefined, changesetId: undefined,
    });
    await registry.transitionChangeset(ws.changeset.id, "submitted", "ready");
    await writeEvents(registry, [input("session.stranded", repo.id, { sessionId: ws.sessionId })]);
    await writeEvents(registry, [input("session.resumed", repo.id, { sessionId: ws.sessionId })]);
    await new LifecycleManager({ registry, clock: systemClock, logger: silent, settings: DEFAULT_SETTINGS }).destroy(ws.sessionId, "client");
    await until(async () => r.publishedSeq === (await headSeq(database.opened.db)), 15_000, "relay to publish");

    const got = await expectExactlyOnceInOrder("lifecycle");
    expect(got.map((m) => m.kind)).toEqual(["session.created", "changeset.transitioned", "session.stranded", "session.resumed", "session.destroyed"]);
    expect(got[0]!.subject).toBe(`berth.session.created.${repo.id}`);
    expect(got[0]!.contentType).toBe("application/x-protobuf");
    const ev = fromBinary(EventSchema, got[1]!.data);
    expect(ev).toMatchObject({ seq: got[1]!.seq, kind: "changeset.transitioned", changesetId: ws.changeset.id, reason: "ready" });
    expect(ev.payload.case).toBe("changesetTransitioned");
    // The cursor is persisted at the acknowledged head (in the background, after the batch).
    await until(async () => (await readRelayCursor(database.opened.db, STREAM)) === got.at(-1)!.seq, 10_000, "the cursor to be saved");
    const info = await (await jetstreamManager(await client())).streams.info(STREAM);
    expect(info.config.subjects).toEqual(["berth.>"]);
    expect(info.config.max_age).toBe(3600 * 1e9);
    expect(info.config.duplicate_window).toBe(120 * 1e9);
  });

  it("publishes proto3 JSON with encoding=json", async () => {
    const r = relay({ encoding: "json" });
    await writeEvents(registry, [input("session.created"), input("session.abandoned")]);
    await until(async () => r.publishedSeq === (await headSeq(database.opened.db)), 15_000, "relay to publish");
    const got = await expectExactlyOnceInOrder("json");
    expect(got[0]!.contentType).toBe("application/json");
    const ev = fromJsonString(EventSchema, new TextDecoder().decode(got[1]!.data));
    expect(ev.kind).toBe("session.abandoned");
    expect(ev.seq).toBe(got[1]!.seq);
    expect(JSON.parse(new TextDecoder().decode(got[1]!.data)).seq).toBe(got[1]!.seq.toString());
  });

  it("keeps working while NATS is down and drains the outbox when it returns, exactly once and in order", async () => {
    const r = relay();
    for (let i = 0; i < 20; i++) await writeEvents(registry, [input(`session.before${i}`)]);
    await until(async () => r.publishedSeq === (await headSeq(database.opened.db)), 15_000, "relay to publish");
    await nats.stop();
    // Writes (RPCs) are unaffected by the outage.
    const t0 = Date.now();
    for (let i = 0; i < 30; i++) await writeEvents(registry, [input(`session.during${i}`), input(`session.during${i}b`)]);
    expect(Date.now() - t0).toBeLessThan(5000);
    await new Promise((res) => setTimeout(res, 1500));
    expect(r.publishedSeq).toBeLessThan(await headSeq(database.opened.db));
    await nats.start();
    await until(async () => r.publishedSeq === (await headSeq(database.opened.db)), 30_000, "relay to drain after NATS returns");
    await expectExactlyOnceInOrder("outage");
  }, 60_000);

  it("a relay process killed mid-batch loses nothing and duplicates nothing (cursor reconciled from the stream)", async () => {
    // Enough events that the pipelined relay cannot publish them all before the kill lands.
    for (let i = 0; i < 400; i++) await writeEvents(registry, Array.from({ length: 5 }, (_, j) => input(`session.k${i}_${j}`)));
    const child = spawn(process.execPath, ["--import", "tsx", "test/events/relay-child.ts"], {
      env: { ...process.env, CHILD_DATABASE_URL: database.url, CHILD_NATS_URL: nats.url, CHILD_STREAM: STREAM },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let published = 0;
    child.stdout.on("data", (b: Buffer) => (published += b.toString().split("\n").filter(Boolean).length));
    const exited = new Promise((res) => child.once("exit", res));
    await until(() => published >= 50, 30_000, "the child relay to publish");
    child.kill("SIGKILL");
    await exited;
    expect(published).toBeLessThan(2000);
    // It never saved its cursor: a naive restart would republish everything it had sent.
    expect(await readRelayCursor(database.opened.db, STREAM)).toBe(0n);
    const r = relay();
    await until(async () => r.publishedSeq === (await headSeq(database.opened.db)), 30_000, "the new relay to finish");
    await expectExactlyOnceInOrder("killed");
  }, 60_000);

  it("after a crash, JetStream's Nats-Msg-Id dedupe alone drops the republished events", async () => {
    for (let i = 0; i < 30; i++) await writeEvents(registry, [input(`session.d${i}`)]);
    const child = spawn(process.execPath, ["--import", "tsx", "test/events/relay-child.ts"], {
      env: { ...process.env, CHILD_DATABASE_URL: database.url, CHILD_NATS_URL: nats.url, CHILD_STREAM: STREAM },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let published = 0;
    child.stdout.on("data", (b: Buffer) => (published += b.toString().split("\n").filter(Boolean).length));
    const exited = new Promise((res) => child.once("exit", res));
    await until(() => published >= 10, 30_000, "the child relay to publish");
    child.kill("SIGKILL");
    await exited;
    const r = relay({ reconcile: false });
    await until(async () => r.publishedSeq === (await headSeq(database.opened.db)), 30_000, "the new relay to finish");
    await expectExactlyOnceInOrder("dedupe");
  }, 60_000);

  it("saving the cursor while publishing goes on never deposes the relay or republishes an event", async () => {
    const published: bigint[] = [];
    // A save after every event: each one overlaps the next publishes.
    const r = relay({ cursorEvery: 1, onPublished: (seq) => published.push(seq) });
    await until(() => r.isLeader, 5000, "the relay to lead");
    await Promise.all(Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; i < 25; i++) await writeEvents(registry, [input(`session.w${w}x${i}`)]);
    }));
    const seqs = await storedSeqs(database.opened.db);
    const head = seqs.at(-1)!;
    await until(() => r.publishedSeq === head, 30_000, "relay to publish");
    await until(async () => (await readRelayCursor(database.opened.db, STREAM)) === head, 10_000, "the cursor to be saved");
    expect(r.isLeader).toBe(true);
    expect(published).toEqual(seqs);
  }, 60_000);

  it("a publish failing mid-pipeline loses nothing and lets nothing behind it into the stream out of order", async () => {
    const r = relay({ pipeline: 32 });
    // The head before this test's event: a relay whose cursor is already there has published nothing of it yet.
    const earlier = await headSeq(database.opened.db);
    await writeEvents(registry, [input("session.before")]);
    await until(async () => {
      const head = await headSeq(database.opened.db);
      return head > earlier && r.publishedSeq === head;
    }, 15_000, "the first event");
    const jsm = await jetstreamManager(await client());
    // The stream refuses the big event (the size counts headers too; a small one is ~400 bytes).
    await jsm.streams.update(STREAM, { max_msg_size: 1000 });
    await writeEvents(registry, [
      input("session.s1"), input("session.s2"), input("session.s3"),
      input("session.big", undefined, { reason: "x".repeat(2000) }),
      input("session.s4"), input("session.s5"), input("session.s6"),
    ]);
    const seqs = await storedSeqs(database.opened.db);
    const beforeBig = seqs[3]!;
    await until(() => r.publishedSeq === beforeBig, 15_000, "the events before the big one");
    // The relay retries the big one (backoff ≤ 500 ms) while the test watches: nothing behind it is stored.
    const watchUntil = Date.now() + 1500;
    while (Date.now() < watchUntil) {
      expect((await jsm.streams.info(STREAM)).state.messages).toBe(4);
      expect(r.publishedSeq).toBe(beforeBig);
    }
    await jsm.streams.update(STREAM, { max_msg_size: -1 });
    await until(() => r.publishedSeq === seqs.at(-1)!, 15_000, "the rest once the stream takes it");
    const got = await expectExactlyOnceInOrder("pipeline-failure");
    expect(got.map((m) => m.kind)).toEqual(["session.before", "session.s1", "session.s2", "session.s3", "session.big", "session.s4", "session.s5", "session.s6"]);
  }, 60_000);

  it("one leader at a time: a second relay on the same database waits, then takes over without loss or duplicate", async () => {
    const a = relay();
    await until(() => a.isLeader, 5000, "first relay to lead");
    const b = relay();
    for (let i = 0; i < 20; i++) await writeEvents(registry, [input(`session.a${i}`)]);
    // Numbered first (storedSeqs): the head of max(seq) alone misses a committed event not yet numbered.
    const aHead = (await storedSeqs(database.opened.db)).at(-1)!;
    await until(() => a.publishedSeq === aHead, 15_000, "leader to publish");
    expect(b.isLeader, relayLog()).toBe(false);
    expect(b.publishedSeq).toBe(0n);
    await a.stop();
    for (let i = 0; i < 20; i++) await writeEvents(registry, [input(`session.b${i}`)]);
    const bHead = (await storedSeqs(database.opened.db)).at(-1)!;
    await until(() => b.publishedSeq === bHead, 15_000, "second relay to take over");
    expect(b.isLeader, relayLog()).toBe(true);
    await expectExactlyOnceInOrder("handover");
  }, 60_000);
});
