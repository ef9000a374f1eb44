/**
 * A relay in its own process, for the "relay killed mid-batch" test: prints each acknowledged
 * seq on stdout and never saves its cursor before being killed (cursorEvery is huge).
 */
import pino from "pino";
import { NatsRelay, leaderLockFor } from "../../src/delivery/nats-relay.js";
import { openDatabase } from "../../src/platform/database.js";

const database = await openDatabase({ url: process.env.CHILD_DATABASE_URL!, dataDir: "unused" });
const relay = new NatsRelay({
  db: database.db,
  logger: pino({ level: "silent" }),
  natsUrl: process.env.CHILD_NATS_URL!,
  stream: process.env.CHILD_STREAM!,
  encoding: "binary",
  retentionSeconds: 3600,
  leader: leaderLockFor(database.db, "postgres", process.env.CHILD_STREAM!),
  batchSize: 1000,
  cursorEvery: 1_000_000,
  onPublished: (seq) => process.stdout.write(`${seq}\n`),
});
relay.start();
