/**
 * The NATS relay's settings: what its creator passes (NatsRelayOptions) and the defaults that
 * fill the rest. Its own module because the relay's parts (its run loop, its publisher, its
 * cursor) all read the same settings, and the relay imports those parts.
 */
import type { Logger } from "pino";
import type { NatsEncoding } from "../config.js";
import type { Db } from "../platform/database.js";
import type { LeaderLock } from "./relay-leader.js";

export interface NatsRelayOptions {
  readonly db: Db;
  readonly logger: Logger;
  readonly natsUrl: string;
  readonly stream: string;
  readonly encoding: NatsEncoding;
  readonly retentionSeconds: number;
  readonly leader: LeaderLock;
  /** Rows per outbox read (default 256). */
  readonly batchSize?: number;
  /** Safety-net poll: local commits nudge the relay and other instances' reach it through notified() (default 1,000 ms). */
  readonly pollIntervalMs?: number;
  /** PubAck timeout (default 5,000 ms). */
  readonly publishTimeoutMs?: number;
  readonly backoffInitialMs?: number;
  readonly backoffMaxMs?: number;
  /** How often a non-leader retries the lock, and a leader re-verifies it (default 2,000 ms). */
  readonly leaderIntervalMs?: number;
  /** JetStream duplicate window (default 120,000 ms, capped at the retention). */
  readonly duplicateWindowMs?: number;
  /** Persist the cursor at least every N acknowledged events (default 64) and at each batch end. */
  readonly cursorEvery?: number;
  /**
   * At (re)connect, skip what the stream's last message shows is already stored (default true).
   * Tests turn it off to prove JetStream's Nats-Msg-Id dedupe alone suffices.
   */
  readonly reconcile?: boolean;
  /** Publishes in flight at once (default 32; 1: each awaited before the next). */
  readonly pipeline?: number;
  /** Called after each acknowledged publish, in seq order (tests, metrics). */
  readonly onPublished?: (seq: bigint) => void;
}

/** The options with every default filled in. */
export type RelaySettings = Required<Omit<NatsRelayOptions, "onPublished">> & Pick<NatsRelayOptions, "onPublished">;

export function relaySettings(options: NatsRelayOptions): RelaySettings {
  return {
    batchSize: 256,
    pollIntervalMs: 1000,
    publishTimeoutMs: 5000,
    backoffInitialMs: 100,
    backoffMaxMs: 5000,
    leaderIntervalMs: 2000,
    duplicateWindowMs: 120_000,
    cursorEvery: 64,
    pipeline: 32,
    reconcile: true,
    ...options,
  };
}
