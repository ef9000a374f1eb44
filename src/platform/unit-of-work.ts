/**
 * The unit of work: the one way Berth changes state.
 *
 * A change runs in one transaction (`run`) — or, on the hot paths that measured the round
 * trips, in one statement in autocommit (`statement`) that embeds the outbox's insert. The
 * events the change records are inserted by one statement before the commit. After the
 * commit one path runs, always the same: wake event delivery, then hand each event to every
 * in-process follower (the registry, the overlay, the turn scheduler).
 *
 * Other instances' commits reach the same followers through `follow(feed)` (the event hub
 * reading PostgreSQL). A local event is handed over first-hand at commit and not again when the
 * feed brings it back; so each follower sees each commit once, whichever instance made it
 * (at least once in the worst case: followers are idempotent). When the feed fails (a
 * subscriber that fell behind), followers resynchronise from the database before events flow
 * again: nobody skips what it missed.
 */
import type { Transaction } from "kysely";
import type { Logger } from "pino";
import type { Db } from "./database.js";
import { insertEvents, notifying, prepareEvent, type CommittedEvent, type EventInput, type NumberedCommit, type PreparedEvent } from "./outbox.js";
import { isStalePreparedStatement } from "./prepared-statements.js";
import type { Database } from "./schema.js";

export type Tx = Transaction<Database>;

/** What a change's work gets: its transaction and where to record its events. */
export interface Change {
  readonly trx: Tx;
  /** Records events of this change: inserted, in this order, just before the commit. */
  record(...events: EventInput[]): void;
  /**
   * Prepares an event that a statement of the change inserts itself (outbox.insertEventsFrom in
   * a CTE): returns its row; after commit it reaches followers like a recorded one.
   */
  prepare(event: EventInput): PreparedEvent["row"];
  /**
   * Says that a statement of the change stored events itself (a set-based INSERT … SELECT,
   * through outbox.insertEventsFrom, seq NULL): delivery is woken after commit; followers get
   * those events through the feed.
   */
  storedEvents(): void;
}

/** An in-process follower of committed changes. */
export interface CommitFollower {
  /** One committed event, local or another instance's. Must not throw; must be idempotent. */
  apply(event: CommittedEvent): void;
  /** Events may have been missed: re-read whatever is cached from the database. */
  resync(): Promise<void>;
}

/** Ids of local events handed over at commit, awaiting their echo from the feed (bounded). */
const ECHOES_KEPT = 50_000;

/** How often a change aborted by a deadlock or serialization conflict is tried in all. */
const CONFLICT_ATTEMPTS = 3;

export class UnitOfWork {
  private readonly followers: { name: string; follower: CommitFollower }[] = [];
  private readonly echoes = new Set<string>();
  private feeding = false;

  constructor(
    readonly db: Db,
    private readonly logger: Logger,
    /**
     * Wakes event delivery (the hub's reader, the relay) after a commit that stored events.
     * `numbered`: the commit numbered its events itself, and which numbers they got (no
     * sequencer pass; delivery that is caught up hands them out without reading them back).
     */
    private readonly wake: (numbered: NumberedCommit | undefined) => void = () => {},
  ) {}

  /** Runs `work` in one transaction; its recorded events are inserted last; then the after-commit path. */
  async run<T>(work: (change: Change) => Promise<T>): Promise<T> {
    let prepared: PreparedEvent[] = [];
    let embedded: PreparedEvent[] = [];
    let storedByStatement = false;
    const result = await this.retryingConflicts(() => this.db.transaction().execute(async (trx) => {
      // A retried callback must not carry the events of an attempt that rolled back.
      prepared = [];
      embedded = [];
      storedByStatement = false;
      const r = await work({
        trx,
        record: (...events) => {
          for (const e of events) prepared.push(prepareEvent(e));
        },
        prepare: (event) => {
          const p = prepareEvent(event);
          embedded.push(p);
          return p.row;
        },
        storedEvents: () => {
          storedByStatement = true;
        },
      });
      if (prepared.length > 0) await insertEvents(prepared.map((p) => p.row)).execute(trx);
      return r;
    }));
    this.afterCommit([...embedded, ...prepared], storedByStatement);
    return result;
  }

  /**
   * A change made by one statement in autocommit: `statement` gets the prepared rows of
   * `events` and inserts them itself (outbox.insertEvents / insertEventsFrom in a CTE).
   * `stored(result)` says whether the events were stored (a conditional CTE may store none).
   */
  async statement<T>(
    events: readonly EventInput[],
    statement: (db: Db, rows: PreparedEvent["row"][]) => Promise<T>,
    stored: (result: T) => boolean = () => true,
  ): Promise<T> {
    const prepared = events.map(prepareEvent);
    const result = await this.retryingConflicts(() => statement(this.db, prepared.map((p) => p.row)));
    if (stored(result)) this.afterCommit(prepared, false);
    return result;
  }

  /**
   * A one-statement change whose statement numbers its own events, in the order given
   * (outbox.numberedEvents, told whether to NOTIFY: outbox.notifying). `numberedHead(result)` is
   * the highest number it took, undefined when it left them to the sequencer (behind another
   * writer's unnumbered rows); delivery is told which.
   */
  async numberingStatement<T>(
    events: readonly EventInput[],
    statement: (db: Db, rows: PreparedEvent["row"][], notify: boolean) => Promise<T>,
    numberedHead: (result: T) => bigint | undefined,
  ): Promise<T> {
    const prepared = events.map(prepareEvent);
    const rows = prepared.map((p) => p.row);
    const result = await notifying((notify) => this.retryingConflicts(() => statement(this.db, rows, notify)), this.logger);
    const head = numberedHead(result);
    this.afterCommit(prepared, false, head === undefined ? undefined : { head, events: prepared });
    return result;
  }

  /**
   * Runs a transaction (or statement) again when PostgreSQL aborted it for a deadlock or a
   * serialization conflict: nothing of it was committed, and the change is re-decided on the
   * new state. Multi-row writers lock in a fixed order (sessions/lifecycle.repository.ts), so this
   * is the safety net, not the rule. Also when a prepared statement's result changed shape under
   * it (another instance's migration; platform/prepared-statements.ts replaces it before its
   * next use).
   */
  private async retryingConflicts<T>(attempt: () => Promise<T>): Promise<T> {
    for (let n = 1; ; n++) {
      try {
        return await attempt();
      } catch (err) {
        const code = (err as { code?: unknown } | null)?.code;
        if (n >= CONFLICT_ATTEMPTS || (code !== "40P01" && code !== "40001" && !isStalePreparedStatement(err))) throw err;
        this.logger.warn({ err, attempt: n }, "transaction aborted by a conflict (deadlock or serialization); running it again");
      }
    }
  }

  /** Registers an in-process follower of every commit (local, and other instances' once `follow` runs). */
  addFollower(name: string, follower: CommitFollower): void {
    this.followers.push({ name, follower });
  }

  /**
   * Follows other instances' commits: `feed` subscribes (synchronously, when called) to every
   * committed event in commit order. Returns the loop's stopper.
   */
  follow(feed: (signal: AbortSignal) => AsyncIterable<CommittedEvent>): { stop(): Promise<void> } {
    const stopping = new AbortController();
    this.feeding = true;
    const loop = (async () => {
      let first = true;
      while (!stopping.signal.aborted) {
        const events = feed(stopping.signal);
        // Subscribed first, resynchronised second: what commits in between arrives through the
        // new subscription and is applied again on top of the fresh state (followers are idempotent).
        if (!first) await this.resync();
        first = false;
        try {
          for await (const e of events) {
            if (this.echoes.delete(e.id)) continue;
            this.dispatch(e);
          }
          return;
        } catch (err) {
          if (stopping.signal.aborted) return;
          this.logger.warn({ err }, "commit feed ended; followers resynchronise from the database");
          this.echoes.clear();
        }
      }
    })();
    return {
      stop: async () => {
        stopping.abort();
        await loop;
        this.feeding = false;
        this.echoes.clear();
      },
    };
  }

  /** Asks every follower to re-read its state from the database. */
  async resync(): Promise<void> {
    await Promise.all(this.followers.map(async ({ name, follower }) => {
      try {
        await follower.resync();
      } catch (err) {
        this.logger.error({ err, follower: name }, "follower could not resynchronise");
      }
    }));
  }

  private afterCommit(prepared: readonly PreparedEvent[], storedByStatement: boolean, numbered?: NumberedCommit): void {
    if (prepared.length === 0 && !storedByStatement) return;
    this.wake(numbered);
    for (const { event } of prepared) {
      if (this.feeding) this.rememberEcho(event.id);
      this.dispatch(event);
    }
  }

  private rememberEcho(id: string): void {
    if (this.echoes.size >= ECHOES_KEPT) {
      // The feed is far behind: forget the oldest; its echo is then applied twice, harmlessly.
      const oldest = this.echoes.values().next().value;
      if (oldest !== undefined) this.echoes.delete(oldest);
    }
    this.echoes.add(id);
  }

  private dispatch(event: CommittedEvent): void {
    for (const { name, follower } of this.followers) {
      try {
        follower.apply(event);
      } catch (err) {
        this.logger.error({ err, follower: name, kind: event.kind }, "follower failed to apply a committed event");
      }
    }
  }
}
