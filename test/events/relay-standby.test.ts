/**
 * A relay that does not lead (another instance holds the stream's advisory lock) retries the
 * lock every leaderIntervalMs, and neither commits nor notifications wake it for that: with the
 * hub passing on every instance's notification, a standby woken by each would spend a pool
 * connection and a round trip per numbering pass of the whole cluster.
 */
import { afterEach, beforeEach, expect, it } from "vitest";
import { NatsRelay, leaderLockFor, type LeaderLock } from "../../src/delivery/nats-relay.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { needs } from "../support/services.js";
import { silent, until } from "./helpers.js";

const STREAM = "BERTH_STANDBY_TEST";

needs({ postgres: true })("a NATS relay on standby", () => {
  let database: TestDatabase;
  const cleanups: (() => Promise<void>)[] = [];
  beforeEach(async () => {
    database = await createTestDatabase("postgres");
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
    await database.drop();
  });

  it("retries the leader lock at its interval only, however many commits and notifications arrive", async () => {
    // Another instance leads: it holds the stream's advisory lock.
    const holder = leaderLockFor(database.opened.db, "postgres", STREAM);
    expect(await holder.acquire()).toBe(true);
    cleanups.push(() => holder.release());
    const real = leaderLockFor(database.opened.db, "postgres", STREAM);
    let attempts = 0;
    const counted: LeaderLock = {
      acquire: async () => {
        attempts++;
        return real.acquire();
      },
      verify: () => real.verify(),
      release: () => real.release(),
    };
    const relay = new NatsRelay({
      db: database.opened.db,
      logger: silent,
      // Never reached: a relay that does not lead does not connect.
      natsUrl: "nats://127.0.0.1:1",
      stream: STREAM,
      encoding: "binary",
      retentionSeconds: 3600,
      leader: counted,
      leaderIntervalMs: 60_000,
    });
    relay.start();
    cleanups.push(() => relay.stop());
    await until(() => attempts === 1, 10_000, "the first attempt at the lock");
    for (let i = 1; i <= 50; i++) {
      relay.nudge(i % 2 === 0);
      relay.notified(BigInt(i));
      await new Promise((r) => setImmediate(r));
    }
    // Let any attempt a wake-up started reach the lock.
    await new Promise((r) => setTimeout(r, 100));
    expect(relay.isLeader).toBe(false);
    expect(attempts).toBe(1);
  });
});
