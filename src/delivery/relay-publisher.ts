/**
 * The NATS relay's side of JetStream: its connection, its stream, and publishing stored events
 * to it in seq order, acknowledged.
 *
 * - Stream: created or updated at start — subjects `berth.>`, max_age = the event
 *   retention, a duplicate window (default 2 min, at most the retention), file storage.
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
 *
 * Each acknowledgement moves the relay's cursor (relay-cursor.ts); when and whether to publish
 * (leadership, nudges, backoff) is the relay's run loop (nats-relay.ts).
 */
import { toBinary, toJsonString } from "@bufbuild/protobuf";
import { JetStreamApiError, StorageType, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type PubAck } from "@nats-io/jetstream";
import { connect, headers, nanos, type NatsConnection } from "@nats-io/transport-node";
import { EventSchema } from "../../gen/berth/v1/event_pb.js";
import type { StoredEvent } from "./event-store.js";
import type { RelayCursor } from "./relay-cursor.js";
import type { RelaySettings } from "./relay-options.js";

/** JetStream's "wrong last sequence": a Nats-Expected-Last-Sequence that did not hold. */
const WRONG_LAST_SEQUENCE = 10071;
/** JetStream's "wrong last msg ID": a Nats-Expected-Last-Msg-Id that did not hold. */
const WRONG_LAST_MSG_ID = 10070;

export function subjectOf(kind: string, repoId: string): string {
  return `berth.${kind}.${repoId}`;
}

export class RelayPublisher {
  private nc: NatsConnection | undefined;
  private js: JetStreamClient | undefined;
  private streamReady = false;
  /** The stream's last sequence, when known: what the next publish expects. */
  private streamLast: number | undefined;

  constructor(
    private readonly o: RelaySettings,
    private readonly cursor: RelayCursor,
    /** Whether publishing may go on: the relay runs and leads (a background save may depose it). */
    private readonly publishing: () => boolean,
  ) {}

  /** After a failure: re-check the stream before the next publish (it may have been deleted). */
  recheckStream(): void {
    this.streamReady = false;
  }

  async ensureConnected(): Promise<void> {
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

  async dropConnection(): Promise<void> {
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

  /** The stream's last message says how far a previous leader really got (its ack may have been lost). */
  private async reconcile(jsm: JetStreamManager): Promise<void> {
    if (this.cursor.stored === undefined) await this.cursor.load();
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
    if (seq > this.cursor.acked) {
      this.o.logger.info({ from: this.cursor.acked.toString(), to: raw }, "nats relay: the stream is ahead of the cursor (an ack was lost); skipping what it holds");
      this.cursor.acked = seq;
      await this.cursor.save();
    }
  }

  async publishBatch(batch: readonly StoredEvent[]): Promise<void> {
    let sinceSave = 0;
    let i = 0;
    while (i < batch.length) {
      // A background save that found the cursor moved deposed this relay.
      if (!this.publishing()) return;
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
        this.cursor.acked = se.seq;
        this.o.onPublished?.(se.seq);
        i++;
        if (++sinceSave >= this.o.cursorEvery) {
          this.cursor.saveInBackground();
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
}
