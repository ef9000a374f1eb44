/**
 * The NATS relay: publishes stored events, in seq order, to a JetStream stream.
 *
 * - Stream: created or updated at start — subjects `berth.>`, max_age = the event retention,
 *   a duplicate window (default 2 min, at most the retention), file storage.
 * - Message: subject `berth.<kind>.<repo_id>`; payload the binary berth.v1.Event with seq set
 *   (or proto3 JSON with encoding "json"); headers Nats-Msg-Id = event id (JetStream dedupe),
 *   berth-kind, berth-seq, content-type.
 * - Order: publishes are pipelined (up to `pipeline` in flight, sent in seq order on one
 *   connection), each with Nats-Expected-Last-Sequence = the stream sequence it must follow
 *   (and, behind another of the window, Nats-Expected-Last-Msg-Id = that one's event id), so
 *   the stream stores a message only if every one before it was stored: a failed publish
 *   makes the ones behind it fail too, and the relay retries from the first unacknowledged
 *   seq, so stream order stays seq order. While the stream's last sequence is not known (at
 *   connect without reconcile, after a duplicate or a mismatch) it publishes one at a time,
 *   unconditionally, until an acknowledgement tells it.
 * - At-least-once: the cursor (relay_cursor.last_seq in the database) only ever moves to an
 *   acknowledged seq, acknowledged in order. It is saved in the background (after a batch,
 *   or every cursorEvery events), never on the path from a commit to its publish: a save
 *   lost in a crash costs repeats, not events. After a
 *   crash the relay republishes from the cursor; JetStream drops the repeats by Nats-Msg-Id,
 *   and at start the relay also skips what the stream's last message (its berth-seq header)
 *   shows was already stored, so repeats do not depend on the duplicate window.
 * - One leader: only the holder of a PostgreSQL advisory lock (session-level, on a dedicated
 *   connection) publishes; the cursor advances by compare-and-set, so a deposed leader stops.
 * - NATS down: publishes fail or time out, the relay backs off (capped) and retries; RPCs are
 *   unaffected and events wait in the outbox until NATS returns.
 */
import { createHash } from "node:crypto";
import { toBinary, toJsonString } from "@bufbuild/protobuf";
import { JetStreamApiError, StorageType, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type PubAck } from "@nats-io/jetstream";
import { connect, headers, nanos, type NatsConnection } from "@nats-io/transport-node";
import { sql, type Kysely } from "kysely";
import type { Logger } from "pino";
import type { NatsEncoding } from "../config.js";
import type { Db } from "../platform/database.js";
import { EventSchema } from "../../gen/berth/v1/event_pb.js";
import { numberedAfter, numberPending } from "./sequencer.js";
import { advanceRelayCursor, readEvents, readRelayCursor, type StoredEvent } from "./event-store.js";

// ---- leadership ---------------------------------------------------------------------------

/** Who may publish. acquire() is non-blocking; verify() re-checks a held lock. */
export interface LeaderLock {
  acquire(): Promise<boolean>;
  verify(): Promise<boolean>;
  release(): Promise<void>;
}

/** PGlite: one process owns the database, so this instance is trivially the leader. */
export class SoleLeader implements LeaderLock {
  acquire(): Promise<boolean> {
    return Promise.resolve(true);
  }
  verify(): Promise<boolean> {
    return Promise.resolve(true);
  }
  release(): Promise<void> {
    return Promise.resolve();
  }
}

/** A stable positive int8 advisory-lock key for a name. */
export function advisoryKey(name: string): bigint {
  return createHash("sha256").update(name).digest().readBigInt64BE(0) & 0x7fffffffffffffffn;
}

/**
 * pg_try_advisory_lock held on one pooled connection for as long as this instance leads.
 * If that connection dies, PostgreSQL releases the lock; verify() notices and reports false.
 */
export class PgAdvisoryLeader implements LeaderLock {
  private conn: Kysely<unknown> | undefined;
  private releaseHeld: (() => void) | undefined;
  private holding: Promise<void> | undefined;
  private failing = false;

  constructor(
    private readonly db: Db,
    private readonly key: bigint,
    /** Where a failed lock query is reported (once until one succeeds). */
    private readonly logger?: Logger,
  ) {}

  acquire(): Promise<boolean> {
    if (this.conn) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      let settled = false;
      const settle = (v: boolean): void => {
        if (!settled) resolve(v);
        settled = true;
      };
      const held = new Promise<void>((r) => (this.releaseHeld = r));
      this.holding = (this.db as unknown as Kysely<unknown>)
        .connection()
        .execute(async (conn) => {
          const r = await sql<{ ok: boolean }>`SELECT pg_try_advisory_lock(${sql.lit(this.key.toString())}::bigint) AS ok`.execute(conn);
          this.failing = false;
          if (!r.rows[0]?.ok) return settle(false);
          this.conn = conn;
          settle(true);
          await held;
          this.conn = undefined;
          // A dead connection has released the lock with it; a live one that failed to unlock still holds it.
          await sql`SELECT pg_advisory_unlock(${sql.lit(this.key.toString())}::bigint)`
            .execute(conn)
            .catch((err: unknown) => this.logger?.warn({ err }, "nats relay: releasing the leader lock failed"));
        })
        .catch((err: unknown) => {
          this.conn = undefined;
          // Not leading is the safe answer, but it must not pass for another instance leading.
          if (!this.failing) this.logger?.warn({ err }, "nats relay: querying the leader lock failed; not leading until it works");
          this.failing = true;
          settle(false);
        });
    });
  }

  async verify(): Promise<boolean> {
    const conn = this.conn;
    if (!conn) return false;
    try {
      await sql`SELECT 1`.execute(conn);
      return true;
    } catch {
      await this.release();
      return false;
    }
  }

  async release(): Promise<void> {
    this.releaseHeld?.();
    this.releaseHeld = undefined;
    await this.holding;
    this.holding = undefined;
  }
}

// ---- relay --------------------------------------------------------------------------------

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

/** JetStream's "wrong last sequence": a Nats-Expected-Last-Sequence that did not hold. */
const WRONG_LAST_SEQUENCE = 10071;
/** JetStream's "wrong last msg ID": a Nats-Expected-Last-Msg-Id that did not hold. */
const WRONG_LAST_MSG_ID = 10070;

export function subjectOf(kind: string, repoId: string): string {
  return `berth.${kind}.${repoId}`;
}

export class NatsRelay {
  private readonly o: Required<Omit<NatsRelayOptions, "onPublished">> & Pick<NatsRelayOptions, "onPublished">;
  private nc: NatsConnection | undefined;
  private js: JetStreamClient | undefined;
  private streamReady = false;
  private leading = false;
  private lastVerified = 0;
  /** Stored cursor, and the highest acknowledged seq (>= stored). */
  private stored: bigint | undefined;
  private acked = 0n;
  private stopped = false;
  private loop: Promise<void> | undefined;
  private sleeping: { done: () => void; wakeOnNudge: boolean } | undefined;
  private nudged = false;
  /** A nudge of a commit whose rows wait for a sequencer pass. */
  private passWanted = false;
  private failures = 0;
  /** The cursor save in flight (one at a time), and whether another was asked for meanwhile. */
  private saving: Promise<void> | undefined;
  private saveAgain = false;
  /** The stream's last sequence, when known: what the next publish expects. */
  private streamLast: number | undefined;

  constructor(options: NatsRelayOptions) {
    this.o = {
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

  /** The highest seq JetStream has acknowledged from this relay (0 before any). */
  get publishedSeq(): bigint {
    return this.acked;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    if (this.loop) return;
    this.loop = this.run();
  }

  /**
   * New events were committed locally: publish them now rather than at the next poll.
   * `numbered`: the commit numbered them itself (no sequencer pass needed for them).
   */
  nudge(numbered = false): void {
    this.nudged = true;
    if (!numbered) this.passWanted = true;
    if (this.sleeping?.wakeOnNudge) this.sleeping.done();
  }

  /**
   * A notification (the event hub's LISTEN): some instance's pass numbered rows up to `head`.
   * Events of other instances' commits reach the relay this way, as soon as they are numbered.
   */
  notified(head: bigint): void {
    if (head > this.acked) this.nudge(true);
  }

  /** Stops publishing, persists the cursor, releases leadership and closes the connection. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.sleeping?.done();
    // Closing the connection rejects an in-flight publish at once (it stays unacknowledged).
    await this.dropConnection();
    await this.loop;
    await this.settleSaves();
    // Unsaved, the next leader republishes from the stored cursor; JetStream drops the duplicates.
    await this.saveCursor().catch((err: unknown) => this.o.logger.warn({ err }, "nats relay: could not save the cursor at stop"));
    await this.dropConnection();
    if (this.leading) await this.o.leader.release().catch((err: unknown) => this.o.logger.warn({ err }, "nats relay: releasing leadership failed"));
    this.leading = false;
  }

  /** Sleeps ms; stop() wakes it, and so does nudge() when `wakeOnNudge` (not during backoff). */
  private sleep(ms: number, wakeOnNudge = true): Promise<void> {
    if (this.stopped || (wakeOnNudge && this.nudged)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(t);
        this.sleeping = undefined;
        resolve();
      };
      const t = setTimeout(done, ms);
      this.sleeping = { done, wakeOnNudge };
    });
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        if (!(await this.lead())) {
          // Not woken by nudges: a standby has nothing to publish, and the nudge flag it never
          // clears would turn the wait into a loop of lock attempts.
          await this.sleep(this.o.leaderIntervalMs, false);
          continue;
        }
        await this.ensureConnected();
        if (this.stored === undefined) await this.loadCursor();
        // Woken only by commits that numbered their own rows: a read suffices. Otherwise (a poll,
        // a commit left to the sequencer, the loop after a batch) number first: the hub numbers
        // committed rows too, but a relay running alone (its own process) must as well.
        const pass = this.passWanted || !this.nudged;
        this.nudged = false;
        this.passWanted = false;
        // What the pass numbered right after the acknowledged seq is published as the pass
        // returned it; the outbox is read only when something else comes first.
        const numbered = pass ? await numberPending(this.o.db, this.o.logger) : undefined;
        const fromPass = numbered === undefined ? [] : numberedAfter(numbered, this.acked);
        const caughtUp = numbered !== undefined && fromPass.length > 0 && fromPass.at(-1)!.seq === numbered.head;
        const batch = caughtUp ? fromPass : await readEvents(this.o.db, this.acked, this.o.batchSize);
        if (batch.length === 0) {
          await this.sleep(this.o.pollIntervalMs);
          continue;
        }
        await this.publishBatch(batch);
        this.saveInBackground();
        if (this.failures > 0) this.o.logger.info({ seq: this.acked.toString() }, "nats relay: publishing again");
        this.failures = 0;
        // A short batch read everything numbered: wait for the next nudge (or the poll) rather
        // than run a pass and a read at once, which an event committed meanwhile would wait behind.
        if (batch.length < this.o.batchSize) await this.sleep(this.o.pollIntervalMs);
      } catch (err) {
        if (this.stopped) break;
        this.failures++;
        const delay = Math.min(this.o.backoffMaxMs, this.o.backoffInitialMs * 2 ** Math.min(this.failures - 1, 16));
        const log = this.failures === 1 || this.failures % 10 === 0 ? "warn" : "debug";
        this.o.logger[log]({ err, attempt: this.failures, retryInMs: delay, seq: this.acked.toString() }, "nats relay: publishing failed; events wait in the outbox");
        await this.settleSaves();
        await this.saveCursor().catch((err: unknown) => this.o.logger.warn({ err }, "nats relay: could not save the cursor"));
        this.streamReady = false; // re-check the stream (it may have been deleted)
        await this.sleep(delay, false);
      }
    }
  }

  /** Holds (or acquires) leadership, re-verifying it every leaderIntervalMs. */
  private async lead(): Promise<boolean> {
    const now = Date.now();
    if (this.leading) {
      if (now - this.lastVerified < this.o.leaderIntervalMs) return true;
      this.lastVerified = now;
      if (await this.o.leader.verify()) return true;
      this.o.logger.warn("nats relay: lost leadership");
      this.leading = false;
      this.stored = undefined;
      return false;
    }
    if (!(await this.o.leader.acquire())) return false;
    this.leading = true;
    this.lastVerified = now;
    this.stored = undefined; // another leader may have advanced it
    this.o.logger.info({ stream: this.o.stream }, "nats relay: leading");
    return true;
  }

  private async ensureConnected(): Promise<void> {
    if (this.nc?.isClosed()) await this.dropConnection();
    if (!this.nc) {
      const nc = await connect({
        servers: this.o.natsUrl,
        name: "berth-relay",
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
        timeout: 2000,
        waitOnFirstConnect: false,
      });
      this.nc = nc;
      this.js = jetstream(nc, { timeout: this.o.publishTimeoutMs });
      this.streamReady = false;
      this.o.logger.info({ url: this.o.natsUrl }, "nats relay: connected");
    }
    if (!this.streamReady) {
      const jsm = await jetstreamManager(this.nc, { timeout: this.o.publishTimeoutMs });
      this.streamLast = undefined;
      await this.ensureStream(jsm);
      await this.reconcile(jsm);
      this.streamReady = true;
    }
  }

  private async dropConnection(): Promise<void> {
    const nc = this.nc;
    this.nc = undefined;
    this.js = undefined;
    // Dropped at stop or after a failure the run loop has logged; a failing close leaves nothing to undo.
    if (nc && !nc.isClosed()) await nc.close().catch(() => {});
  }

  private async ensureStream(jsm: JetStreamManager): Promise<void> {
    const retentionMs = this.o.retentionSeconds * 1000;
    const cfg = {
      subjects: ["berth.>"],
      max_age: nanos(retentionMs),
      duplicate_window: nanos(Math.min(this.o.duplicateWindowMs, retentionMs)),
    };
    try {
      await jsm.streams.info(this.o.stream);
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === 10059) {
        await jsm.streams.add({ name: this.o.stream, storage: StorageType.File, ...cfg });
        this.o.logger.info({ stream: this.o.stream }, "nats relay: stream created");
        return;
      }
      throw err;
    }
    await jsm.streams.update(this.o.stream, cfg);
  }

  private async loadCursor(): Promise<void> {
    const c = await readRelayCursor(this.o.db, this.o.stream);
    this.stored = c;
    this.acked = c;
  }

  /** The stream's last message says how far a previous leader really got (its ack may have been lost). */
  private async reconcile(jsm: JetStreamManager): Promise<void> {
    if (this.stored === undefined) await this.loadCursor();
    if (!this.o.reconcile) return;
    const info = await jsm.streams.info(this.o.stream);
    this.streamLast = info.state.last_seq;
    if (info.state.messages === 0) return;
    // An optimisation: without the last message (e.g. expired since info()) the relay republishes
    // from the stored cursor and JetStream's Nats-Msg-Id dedupe drops what the stream already holds.
    const last = await jsm.streams.getMessage(this.o.stream, { seq: info.state.last_seq }).catch(() => null);
    const raw = last?.header?.get("berth-seq");
    if (!raw || !/^\d+$/.test(raw)) return;
    const seq = BigInt(raw);
    if (seq > this.acked) {
      this.o.logger.info({ from: this.acked.toString(), to: raw }, "nats relay: the stream is ahead of the cursor (an ack was lost); skipping what it holds");
      this.acked = seq;
      await this.saveCursor();
    }
  }

  private async publishBatch(batch: readonly StoredEvent[]): Promise<void> {
    let sinceSave = 0;
    let i = 0;
    while (i < batch.length) {
      // A background save that found the cursor moved deposed this relay.
      if (this.stopped || !this.leading) return;
      const last = this.streamLast;
      const window = last === undefined || this.o.pipeline <= 1 ? batch.slice(i, i + 1) : batch.slice(i, i + this.o.pipeline);
      // All sent now, in order, on one connection; the k-th may only follow the (k-1)-th.
      const sent = window.map((se, k) => this.send(se, last === undefined ? undefined : last + k, k > 0 ? window[k - 1]!.event.id : undefined));
      const results = await Promise.allSettled(sent);
      for (let k = 0; k < window.length; k++) {
        const r = results[k]!;
        if (r.status === "rejected") {
          this.streamLast = undefined;
          // The stream is not where this relay thought (another publisher, an expired or purged
          // stream): re-learn it from an unconditional publish. Anything else is a failure.
          if (r.reason instanceof JetStreamApiError && (r.reason.code === WRONG_LAST_SEQUENCE || r.reason.code === WRONG_LAST_MSG_ID)) break;
          throw r.reason;
        }
        const se = window[k]!;
        this.acked = se.seq;
        this.o.onPublished?.(se.seq);
        i++;
        if (++sinceSave >= this.o.cursorEvery) {
          this.saveInBackground();
          sinceSave = 0;
        }
        // A duplicate did not move the stream: those behind it expected the wrong sequence.
        if (r.value.duplicate) {
          this.streamLast = undefined;
          break;
        }
        this.streamLast = r.value.seq;
      }
    }
  }

  /**
   * One publish. `expectLast`: the stream's last sequence it must follow; `expectPrevId`: the
   * event that must be the stream's last message (within a window, so that a foreign message
   * between two of ours cannot let the second be stored after a rejected first).
   */
  private send(se: StoredEvent, expectLast: number | undefined, expectPrevId: string | undefined): Promise<PubAck> {
    const json = this.o.encoding === "json";
    const ev = se.event;
    const h = headers();
    h.set("berth-kind", ev.kind);
    h.set("berth-seq", se.seq.toString());
    h.set("content-type", json ? "application/json" : "application/x-protobuf");
    const data = json ? new TextEncoder().encode(toJsonString(EventSchema, ev)) : toBinary(EventSchema, ev);
    return this.js!.publish(subjectOf(ev.kind, ev.repoId), data, {
      msgID: ev.id,
      headers: h,
      timeout: this.o.publishTimeoutMs,
      ...(expectLast === undefined ? {} : { expect: expectPrevId === undefined ? { lastSequence: expectLast } : { lastSequence: expectLast, lastMsgID: expectPrevId } }),
    });
  }

  /**
   * Saves the cursor without holding up publishing. Saves never overlap (the compare-and-set
   * needs the stored value of the previous one); one asked for during a save runs after it.
   */
  private saveInBackground(): void {
    if (this.saving) {
      this.saveAgain = true;
      return;
    }
    this.saving = (async () => {
      do {
        this.saveAgain = false;
        await this.saveCursor();
      } while (this.saveAgain && this.leading && !this.stopped);
    })()
      .catch((err: unknown) => {
        if (this.leading) this.o.logger.warn({ err, seq: this.acked.toString() }, "nats relay: could not save the cursor; retrying after the next batch");
      })
      .finally(() => (this.saving = undefined));
  }

  /** Waits for the background save, if any (its failure is already logged). */
  private async settleSaves(): Promise<void> {
    while (this.saving) await this.saving;
  }

  /** Moves the stored cursor to the acknowledged seq (compare-and-set). */
  private async saveCursor(): Promise<void> {
    if (this.stored === undefined || this.acked <= this.stored || !this.leading) return;
    // Publishing goes on during the write: what is stored is what was written, not acked by then.
    const to = this.acked;
    const ok = await advanceRelayCursor(this.o.db, this.o.stream, this.stored, to);
    if (ok) {
      this.stored = to;
      return;
    }
    this.o.logger.warn({ stream: this.o.stream }, "nats relay: the cursor was moved by another instance; giving up leadership");
    this.leading = false;
    this.stored = undefined;
    await this.o.leader.release().catch((err: unknown) => this.o.logger.warn({ err }, "nats relay: releasing leadership failed"));
    throw new Error("relay cursor moved by another instance");
  }
}

/** The leader lock suited to the database: an advisory lock on PostgreSQL, trivial on PGlite. */
export function leaderLockFor(db: Db, kind: "postgres" | "pglite", stream: string, logger?: Logger): LeaderLock {
  return kind === "postgres" ? new PgAdvisoryLeader(db, advisoryKey(`berth-relay:${stream}`), logger) : new SoleLeader();
}
