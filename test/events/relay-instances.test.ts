/**
 * Two instances on one PostgreSQL, one NATS relay leading: an event committed on the instance
 * that does not lead reaches JetStream as soon as it is numbered (the leader hears the
 * numbering pass's NOTIFY through its event hub), not at the relay's safety-net poll, which
 * is set here far beyond the test's bound.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EventSchema } from "../../gen/berth/v1/event_pb.js";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { needs } from "../support/services.js";
import { NatsServer, until } from "./helpers.js";

const POLL_MS = 600_000;

needs({ postgres: true, natsServer: true })("NATS relay across instances", () => {
  let nats: NatsServer;
  let berth: TestBerth;
  beforeAll(async () => {
    nats = await NatsServer.launch();
    berth = await startBerth({ kind: "postgres", instances: 2, env: { NATS_URL: nats.url, BERTH_EVENT_POLL_MS: String(POLL_MS) } });
  });
  afterAll(async () => {
    await berth?.close();
    await nats?.destroy();
  });

  it("publishes an event committed on the instance that does not lead within seconds, not at the relay's poll", async () => {
    const [leader, other] = berth.servers as [(typeof berth.servers)[0], (typeof berth.servers)[0]];
    // The first instance starts its relay first and takes the advisory lock.
    await until(() => leader.relay?.isLeader === true, 10_000, "the first instance's relay to lead");
    expect(other.relay?.isLeader).toBe(false);
    const client = createGrpcClient(WorkspaceService, other.grpcAddress);
    try {
      const repo = (await client.registerRepository({ name: "relay-instances" })).repository!;
      const started = Date.now();
      const ws = (await client.createWorkspace({ repoId: repo.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "agent-relay" })).workspace!;
      await other.events.sync();
      const seq = other.events.headSeq;
      await until(() => leader.relay!.publishedSeq >= seq, 10_000, `event seq ${seq} published by the leading relay`);
      expect(Date.now() - started).toBeLessThan(POLL_MS / 10);

      const nc = await connect({ servers: nats.url });
      try {
        const jsm = await jetstreamManager(nc);
        const stored = await jsm.streams.getMessage("BERTH_EVENTS", { last_by_subj: `berth.session.created.${repo.id}` });
        expect(stored?.header.get("berth-seq")).toBe(seq.toString());
        const event = fromBinary(EventSchema, stored!.data);
        expect(event).toMatchObject({ kind: "session.created", sessionId: ws.sessionId });
      } finally {
        await nc.close();
      }
    } finally {
      client.close();
    }
  });
});
