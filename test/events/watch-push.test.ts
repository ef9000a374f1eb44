/**
 * WatchEvents pushed over gRPC (src/api/push-stream.ts → grpc-bridge): the hub writes to the
 * grpc-js call itself. A raw HTTP/2 client that stops reading makes the server's write() refuse
 * (HTTP/2 flow control), so these check the backpressure path for real: the subscription pauses
 * until 'drain' and loses nothing, a subscriber that stays behind is ended RESOURCE_EXHAUSTED
 * SUBSCRIBER_TOO_SLOW with a last_seq that resuming from loses nothing, and cancelling ends the
 * subscription whether it is live or paused. An agent's read model (grants looked up on a
 * repository's first event) keeps the order.
 */
import http2 from "node:http2";
import { fromBinary, toBinary, create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WatchEventsRequestSchema, WatchEventsResponseSchema, WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { registration } from "../../src/api/handler.js";
import { eventHandlers } from "../../src/api/event-handlers.js";
import type { WorkspaceServiceDeps } from "../../src/api/workspace-deps.js";
import { noAuthenticator, type Authenticator } from "../../src/auth/authenticator.js";
import { principalOf } from "../../src/auth/principal.js";
import { grantsOf } from "../../src/auth/grants.js";
import { EventHub } from "../../src/delivery/hub.js";
import type { WorkspaceRegistry } from "../../src/sessions/registry.js";
import { HealthState } from "../../src/transport/health.js";
import { startTransports, type Transports } from "../../src/transport/transports.js";
import { BerthError } from "../../src/platform/errors.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { captureLogger } from "../transport/harness.js";
import { REPO_A, input, registryOn, silent, storedSeqs, until, writeEvents } from "./helpers.js";

const MAX_BUFFERED = 40;
/** Big enough that a few dozen events fill HTTP/2's 64 KiB stream window. */
const BIG = "x".repeat(4000);

let database: TestDatabase;
let hub: EventHub;
let registry: WorkspaceRegistry;
let transports: Transports;
/** The same service for an agent granted one repository by name (its grant needs a lookup). */
let agentTransports: Transports;
const logs: Record<string, unknown>[] = [];

function serve(deps: WorkspaceServiceDeps, authenticator: Authenticator): Promise<Transports> {
  const unimplemented = (): never => {
    throw new BerthError("unimplemented", "UNIMPLEMENTED", "not in this test");
  };
  const handlers = Object.fromEntries(WorkspaceService.methods.map((m) => [m.localName, unimplemented]));
  return startTransports({
    grpcAddr: { host: "127.0.0.1", port: 0 },
    httpAddr: { host: "127.0.0.1", port: 0 },
    tls: undefined,
    services: [registration(WorkspaceService, { ...handlers, ...eventHandlers(deps) } as never)],
    authenticator,
    logger: captureLogger(logs),
    health: new HealthState(["", WorkspaceService.typeName], true),
  });
}

beforeAll(async () => {
  database = await createTestDatabase();
  hub = new EventHub({ db: database.opened.db, logger: silent, pollIntervalMs: 50, batchSize: 50 });
  await hub.start();
  registry = registryOn(database.opened.db, () => hub.nudge());
  const deps = { events: hub, registry, eventSubscriberOptions: { maxBufferedEvents: MAX_BUFFERED } } as unknown as WorkspaceServiceDeps;
  transports = await serve(deps, noAuthenticator);
  agentTransports = await serve(deps, { fixedPrincipal: principalOf("agent-x", ["agent"], grantsOf(["granted"])), authenticate: () => noAuthenticator.fixedPrincipal! });
});
afterAll(async () => {
  await transports?.shutdown(200);
  await agentTransports?.shutdown(200);
  await hub?.stop();
  await database?.drop();
});

interface Watch {
  readonly seqs: bigint[];
  /** Resolves with the grpc-status and, on failure, the ErrorInfo. */
  readonly status: Promise<{ code: number; reason?: string; metadata: Record<string, string> }>;
  pause(): void;
  resume(): void;
  cancel(): void;
}

/** A raw gRPC WatchEvents over its own HTTP/2 connection, so that pausing it throttles only it. */
function watch(afterSeq: bigint, port = transports.grpcPort): Watch {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on("error", () => {});
  const req = session.request({ ":method": "POST", ":path": "/berth.v1.WorkspaceService/WatchEvents", "content-type": "application/grpc", te: "trailers" });
  const body = toBinary(WatchEventsRequestSchema, create(WatchEventsRequestSchema, { afterSeq }));
  const framed = Buffer.alloc(5 + body.length);
  framed.writeUInt32BE(body.length, 1);
  framed.set(body, 5);
  req.end(framed);
  const seqs: bigint[] = [];
  let pending = Buffer.alloc(0);
  req.on("data", (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 5 && pending.length >= 5 + pending.readUInt32BE(1)) {
      const len = pending.readUInt32BE(1);
      seqs.push(fromBinary(WatchEventsResponseSchema, pending.subarray(5, 5 + len)).event!.seq);
      pending = pending.subarray(5 + len);
    }
  });
  const status = new Promise<{ code: number; reason?: string; metadata: Record<string, string> }>((resolve, reject) => {
    let headers: http2.IncomingHttpHeaders = {};
    const settle = (): void => {
      const code = Number(headers["grpc-status"]);
      const bin = headers["grpc-status-details-bin"];
      const info = typeof bin === "string" ? fromBinary(StatusSchema, Buffer.from(bin, "base64")).details.map((d) => anyUnpack(d, ErrorInfoSchema)).find((d) => d !== undefined) : undefined;
      resolve({ code, ...(info ? { reason: info.reason } : {}), metadata: { ...(info?.metadata ?? {}) } });
    };
    req.on("response", (h) => {
      if (h["grpc-status"] !== undefined) headers = h;
    });
    req.on("trailers", (t) => (headers = t));
    req.on("close", () => (headers["grpc-status"] !== undefined ? settle() : resolve({ code: -1, metadata: {} })));
    req.on("error", reject);
  });
  void status.finally(() => session.close()).catch(() => {});
  return {
    seqs,
    status,
    pause: () => req.pause(),
    resume: () => req.resume(),
    cancel: () => req.close(http2.constants.NGHTTP2_CANCEL),
  };
}

async function headSeq(): Promise<bigint> {
  return (await storedSeqs(database.opened.db)).at(-1) ?? 0n;
}

describe("WatchEvents pushed to the grpc-js call", () => {
  it("a reader that stops for a while pauses its subscription (write() refused) and then gets every event, in order", async () => {
    const after = await headSeq();
    const w = watch(after);
    await until(() => hub.subscriberCount === 1, 5_000, "subscribed");
    w.pause();
    // Fewer than the subscription's bound, more than flow control lets out: the rest waits in the hub.
    const n = MAX_BUFFERED + 10;
    for (let i = 0; i < n; i++) await writeEvents(registry, [input("session.big", REPO_A, { reason: BIG })]);
    await hub.sync();
    w.resume();
    const expected = (await storedSeqs(database.opened.db)).filter((s) => s > after);
    await until(() => w.seqs.length === expected.length, 10_000, "every event");
    expect(w.seqs).toEqual(expected);
    w.cancel();
    await until(() => hub.subscriberCount === 0, 5_000, "unsubscribed");
  });

  it("a reader that stays behind is ended RESOURCE_EXHAUSTED SUBSCRIBER_TOO_SLOW after what it was sent; resuming after last_seq loses nothing", async () => {
    const after = await headSeq();
    const w = watch(after);
    await until(() => hub.subscriberCount === 1, 5_000, "subscribed");
    w.pause();
    for (let i = 0; i < 4 * MAX_BUFFERED; i++) await writeEvents(registry, [input("session.big", REPO_A, { reason: BIG })]);
    await hub.sync();
    // Ended by the hub (its buffer overflowed) while the client still reads nothing.
    await until(() => hub.subscriberCount === 0, 10_000, "ended as too slow");
    w.resume();
    const status = await w.status;
    expect(status.code).toBe(8); // RESOURCE_EXHAUSTED
    expect(status.reason).toBe("SUBSCRIBER_TOO_SLOW");
    const lastSeq = BigInt(status.metadata.last_seq!);
    // Everything up to last_seq arrived before the status, in order, with no gap.
    const stored = (await storedSeqs(database.opened.db)).filter((s) => s > after);
    expect(w.seqs).toEqual(stored.filter((s) => s <= lastSeq));
    expect(w.seqs.length).toBeLessThan(stored.length);
    const rest = watch(lastSeq);
    const expected = stored.filter((s) => s > lastSeq);
    await until(() => rest.seqs.length === expected.length, 10_000, "the rest");
    expect([...w.seqs, ...rest.seqs]).toEqual(stored);
    rest.cancel();
    await until(() => hub.subscriberCount === 0, 5_000, "unsubscribed");
  });

  it("cancelling ends the subscription, live or paused by backpressure, and logs CANCELLED", async () => {
    const live = watch(await headSeq());
    await until(() => hub.subscriberCount === 1, 5_000, "subscribed");
    await writeEvents(registry, [input("session.one")]);
    await until(() => live.seqs.length === 1, 5_000, "one event");
    live.cancel();
    await until(() => hub.subscriberCount === 0, 5_000, "live stream unsubscribed");

    const paused = watch(await headSeq());
    await until(() => hub.subscriberCount === 1, 5_000, "subscribed");
    paused.pause();
    for (let i = 0; i < MAX_BUFFERED; i++) await writeEvents(registry, [input("session.big", REPO_A, { reason: BIG })]);
    await hub.sync();
    paused.cancel();
    await until(() => hub.subscriberCount === 0, 5_000, "paused stream unsubscribed");
    await until(() => logs.filter((l) => l["msg"] === "rpc" && l["method"] === "/berth.v1.WorkspaceService/WatchEvents" && l["code"] === "CANCELLED").length >= 2, 5_000, "two CANCELLED lines");
  });

  it("an agent without repo_ids gets its granted repositories' events only, in order, the first of each waiting for its grant lookup", async () => {
    const granted = await registry.registerRepository(`granted`, {});
    const other = await registry.registerRepository(`other`, {});
    const w = watch(await headSeq(), agentTransports.grpcPort);
    await until(() => hub.subscriberCount === 1, 5_000, "subscribed");
    for (let i = 0; i < 6; i++) await writeEvents(registry, [input("session.created", i % 2 ? other.id : granted.id), input("session.stranded", granted.id)]);
    await hub.sync();
    const db = database.opened.db;
    const rows = await db.selectFrom("events").select(["seq", "repo_id"]).where("repo_id", "=", granted.id).where("kind", "in", ["session.created", "session.stranded"]).orderBy("seq").execute();
    const expected = rows.map((r) => BigInt(r.seq!));
    await until(() => w.seqs.length === expected.length, 10_000, "the granted repository's events");
    expect(w.seqs).toEqual(expected);
    w.cancel();
    await until(() => hub.subscriberCount === 0, 5_000, "unsubscribed");
  });
});
