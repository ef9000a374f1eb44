/**
 * A JetStream consumer of Berth's session events (`berth.session.>`), with a durable pull
 * consumer (@nats-io/jetstream) and the binary berth.v1.Event decoded with fromBinary:
 *
 *   NATS_URL=nats://127.0.0.1:4222 npx tsx examples/nats/consumer.ts [--durable NAME] [--stream BERTH_EVENTS]
 *        [--subject 'berth.session.>'] [--count N] [--idle-exit-ms MS]
 *
 * The durable consumer remembers what it acknowledged: stop it and start it again with the same
 * --durable and it resumes after the last acknowledged event. Each event is acknowledged after it
 * is handled (printed here), so a crash redelivers it — handle events idempotently (dedupe on
 * `Nats-Msg-Id` = event id, or keep the highest `berth-seq` seen; see docs/events.md).
 * With --count N it exits after N events; with --idle-exit-ms after that long without one.
 */
import { parseArgs } from "node:util";
import { fromBinary, fromJsonString } from "@bufbuild/protobuf";
import { AckPolicy, DeliverPolicy, JetStreamApiError, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { EventSchema, type Event } from "../../gen/berth/v1/event_pb.js";

const { values } = parseArgs({
  options: {
    server: { type: "string", default: process.env["NATS_URL"] ?? "nats://127.0.0.1:4222" },
    stream: { type: "string", default: process.env["BERTH_NATS_STREAM"] ?? "BERTH_EVENTS" },
    durable: { type: "string", default: "berth-session-example" },
    subject: { type: "string", default: "berth.session.>" },
    count: { type: "string" },
    "idle-exit-ms": { type: "string" },
  },
});
const stream = values.stream;
const durable = values.durable;
const limit = values.count === undefined ? Infinity : Number(values.count);
const idleExitMs = values["idle-exit-ms"] === undefined ? undefined : Number(values["idle-exit-ms"]);

/** The relay sends binary protobuf by default, proto3 JSON with BERTH_NATS_ENCODING=json. */
function decode(data: Uint8Array, contentType: string | undefined): Event {
  return contentType === "application/json" ? fromJsonString(EventSchema, new TextDecoder().decode(data)) : fromBinary(EventSchema, data);
}

const nc = await connect({ servers: values.server, name: `berth-example-${durable}` });
let stopping = false;
const stop = (): void => {
  stopping = true;
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
try {
  const jsm = await jetstreamManager(nc);
  // Create the durable consumer once; later runs find it and resume where it left off.
  try {
    await jsm.consumers.info(stream, durable);
  } catch (err) {
    if (!(err instanceof JetStreamApiError)) throw err;
    await jsm.consumers.add(stream, {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      filter_subject: values.subject,
    });
    console.log(`created durable consumer ${durable} on ${stream} (${values.subject})`);
  }
  const consumer = await jetstream(nc).consumers.get(stream, durable);
  console.log(`consuming ${values.subject} from ${stream} as ${durable}`);
  let seen = 0;
  let lastMessageAt = Date.now();
  while (!stopping && seen < limit) {
    const m = await consumer.next({ expires: 1000 });
    if (m === null) {
      if (idleExitMs !== undefined && Date.now() - lastMessageAt >= idleExitMs) break;
      continue;
    }
    lastMessageAt = Date.now();
    const event = decode(m.data, m.headers?.get("content-type"));
    console.log(
      `seq ${event.seq} ${event.kind} repo=${event.repoId} session=${event.sessionId || "-"} workspace=${event.workspaceId || "-"} reason=${event.reason || "-"} subject=${m.subject}`,
    );
    m.ack();
    seen++;
  }
  console.log(`consumed ${seen} events`);
} finally {
  await nc.drain();
}
