/**
 * Who may publish to the NATS stream: one leader among the instances. Only the holder of a
 * PostgreSQL advisory lock (session-level, on a dedicated connection) publishes; the relay's
 * cursor advances by compare-and-set (relay-cursor.ts), so a deposed leader stops. On PGlite
 * one process owns the database and is trivially the leader.
 *
 * Apart from the relay (nats-relay.ts) because holding a lock on a pooled connection is its own
 * small protocol; the relay only asks acquire(), verify() and release().
 */
import { createHash } from "node:crypto";
import { sql, type Kysely } from "kysely";
import type { Logger } from "pino";
import type { Db } from "../platform/database.js";

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

/** The leader lock suited to the database: an advisory lock on PostgreSQL, trivial on PGlite. */
export function leaderLockFor(db: Db, kind: "postgres" | "pglite", stream: string, logger?: Logger): LeaderLock {
  return kind === "postgres" ? new PgAdvisoryLeader(db, advisoryKey(`berth-relay:${stream}`), logger) : new SoleLeader();
}
