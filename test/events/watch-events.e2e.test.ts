/**
 * WatchEvents end to end: a real server (build()) with the hub and the NATS relay wired, a real
 * gRPC client and a Connect client; the same lifecycle seen by a WatchEvents stream and by a
 * JetStream consumer.
 */
import { storedSeqs } from "./helpers.js";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Event } from "../../gen/berth/v1/event_pb.js";
import { ChangesetState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { failure } from "../support/rpc-error.js";
import { optional } from "../support/services.js";
import { NatsServer, until } from "./helpers.js";

const jetStream = optional({ natsServer: true }, "that JetStream gets the same events");
let nats: NatsServer | undefined;
let berth: TestBerth;

beforeAll(async () => {
  if (jetStream.ok) nats = await NatsServer.launch();
  berth = await startBerth({ env: nats ? { NATS_URL: nats.url } : {} });
});
afterAll(async () => {
  await berth?.close();
  await nats?.destroy();
});

async function collect(stream: AsyncIterable<{ event?: Event | undefined }>, n: number, ac: AbortController): Promise<Event[]> {
  const out: Event[] = [];
  const t = setTimeout(() => ac.abort(), 15_000);
  try {
    for await (const m of stream) {
      out.push(m.event!);
      if (out.length === n) break;
    }
  } finally {
    clearTimeout(t);
  }
  return out;
}

async function lifecycle(client: TestBerth["grpc"] | TestBerth["connect"], name: string) {
  const { repository } = await client.registerRepository({ name });
  const { workspace } = await client.createWorkspace({ repoId: repository!.id, intent: "watch", baseCommit: "abc", mode: WorkspaceMode.EPHEMERAL, agentId: "watcher" });
  await client.transitionChangeset({ changesetId: workspace!.changesetId, toState: ChangesetState.SUBMITTED, reason: "go" });
  await client.destroyWorkspace({ sessionId: workspace!.sessionId });
  return { repoId: repository!.id, sessionId: workspace!.sessionId };
}

describe("WatchEvents through the real server", () => {
  it("over gRPC: replays then streams live events of a lifecycle made by RPCs, and JetStream gets the same", jetStream.options, async () => {
    const ac = new AbortController();
    const live = collect(berth.grpc.watchEvents({ afterSeq: 0n }, { signal: ac.signal }), 3, ac);
    const { repoId, sessionId } = await lifecycle(berth.grpc, "watched-grpc");
    const got = await live;
    expect(got.map((e) => e.kind)).toEqual(["session.created", "changeset.transitioned", "session.destroyed"]);
    expect(got.every((e) => e.repoId === repoId)).toBe(true);
    expect(got[0]!.sessionId).toBe(sessionId);
    expect(got[1]!.payload.case).toBe("changesetTransitioned");
    for (let i = 1; i < got.length; i++) expect(got[i]!.seq > got[i - 1]!.seq).toBe(true);

    // Resuming after the first gives the other two; filters apply to the replay.
    const ac2 = new AbortController();
    const resumed = await collect(berth.grpc.watchEvents({ afterSeq: got[0]!.seq, repoIds: [repoId] }, { signal: ac2.signal }), 2, ac2);
    expect(resumed.map((e) => e.id)).toEqual(got.slice(1).map((e) => e.id));
    const ac3 = new AbortController();
    const onlySession = await collect(berth.grpc.watchEvents({ kinds: ["session.*"], repoIds: [repoId] }, { signal: ac3.signal }), 2, ac3);
    expect(onlySession.map((e) => e.kind)).toEqual(["session.created", "session.destroyed"]);

    if (nats) {
      await until(async () => (berth.server.relay?.publishedSeq ?? 0n) >= got[2]!.seq, 15_000, "relay");
      const nc = await connect({ servers: nats.url });
      try {
        const jsm = await jetstreamManager(nc);
        await jsm.consumers.add("BERTH_EVENTS", { durable_name: "e2e", ack_policy: AckPolicy.Explicit, filter_subject: `berth.*.*.${repoId}` });
        const c = await jetstream(nc).consumers.get("BERTH_EVENTS", "e2e");
        const ids: string[] = [];
        for (let i = 0; i < 3; i++) {
          const m = await c.next({ expires: 2000 });
          ids.push(m!.headers!.get("Nats-Msg-Id"));
          m!.ack();
        }
        expect(ids).toEqual(got.map((e) => e.id));
        expect(await c.next({ expires: 1000 })).toBeNull();
      } finally {
        await nc.close();
      }
    }
  });

  it("over Connect: the same stream", async () => {
    const ac = new AbortController();
    const { repoId } = await lifecycle(berth.connect, "watched-connect");
    const got = await collect(berth.connect.watchEvents({ repoIds: [repoId] }, { signal: ac.signal }), 3, ac);
    expect(got.map((e) => e.kind)).toEqual(["session.created", "changeset.transitioned", "session.destroyed"]);
  });

  it("rejects bad filters with INVALID_ARGUMENT naming the field", async () => {
    const drain = async (s: AsyncIterable<unknown>) => {
      for await (const _ of s) void _;
    };
    const f1 = await failure(drain(berth.grpc.watchEvents({ repoIds: ["not-a-uuid"] })));
    expect(f1.code).toBe("INVALID_ARGUMENT");
    expect(f1.fields).toEqual(["repo_ids[0]"]);
    const f2 = await failure(drain(berth.grpc.watchEvents({ kinds: ["session.*", "ses*ion", "*"] })));
    expect(f2.code).toBe("INVALID_ARGUMENT");
    expect(f2.fields).toEqual(["kinds[1]"]);
    const f3 = await failure(drain(berth.connect.watchEvents({ excludeSessionId: "x" })));
    expect(f3.code).toBe("INVALID_ARGUMENT");
    expect(f3.fields).toEqual(["exclude_session_id"]);
  });

  it("answers OUT_OF_RANGE with oldest_seq when after_seq is older than what was retained", async () => {
    const db = berth.database.opened.db;
    await lifecycle(berth.grpc, "pruned");
    const seqs = await storedSeqs(db);
    // Simulate a pruning pass that removed the first two events.
    await sql`DELETE FROM events WHERE seq <= ${seqs[1]!.toString()}`.execute(db);
    await sql`UPDATE event_retention SET pruned_through = ${seqs[1]!.toString()}`.execute(db);
    const f = await failure(
      (async () => {
        for await (const _ of berth.grpc.watchEvents({ afterSeq: seqs[0]! })) void _;
      })(),
    );
    expect(f.code).toBe("OUT_OF_RANGE");
    expect(f.reason).toBe("EVENTS_PRUNED");
    expect(f.metadata.oldest_seq).toBe(seqs[2]!.toString());
  });
});
