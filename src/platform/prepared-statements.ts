/**
 * Named prepared statements for the statements Berth runs over and over (pg only; PGlite has no
 * network round trip to save and plans in-process).
 *
 * Why: an unnamed statement is parsed and planned by PostgreSQL on every execution. Measured on
 * the WriteFile path (bench/NOTES.md, write-file): parse + bind (which includes the custom plan)
 * were about half of PostgreSQL's time per write, the write's CTE alone 1 ms of its 1.45 ms.
 * A named statement is parsed once per connection, and after five executions PostgreSQL may
 * switch it to a generic plan (plan_cache_mode = auto: only when that plan is not costlier
 * than the custom ones), which skips planning too.
 *
 * Bounds: a text is named only after it was seen HOT_AFTER times, and at most MAX_NAMED texts per
 * process are ever named (every pooled connection may prepare each of them once): statements
 * built with a varying shape (IN lists of n parameters) cannot grow the backends' memory without
 * limit. The name is derived from the text, so a name always means the same text.
 *
 * After a schema change by another process (another instance's migration in a rolling upgrade),
 * PostgreSQL refuses a prepared statement whose result columns changed ("cached plan must not
 * change result type", SQLSTATE 0A000): the statement is forgotten on that connection and the
 * call is run again unnamed, so a serving instance never fails for it.
 */
import { createHash } from "node:crypto";
import type pg from "pg";

const HOT_AFTER = 3;
const MAX_NAMED = 512;
/** Texts counted but not (yet) named; cleared when full, so one-off texts do not pile up. */
const MAX_COUNTED = 4096;

/** What this process names: shared by every pool it opens (the bound is per backend connection). */
class StatementNames {
  private readonly names = new Map<string, string>();
  private readonly counts = new Map<string, number>();

  /** The statement's name, once the text is hot and the bound allows; else undefined (run unnamed). */
  nameOf(text: string): string | undefined {
    const named = this.names.get(text);
    if (named !== undefined) return named;
    if (this.names.size >= MAX_NAMED) return undefined;
    const seen = (this.counts.get(text) ?? 0) + 1;
    if (seen < HOT_AFTER) {
      if (this.counts.size >= MAX_COUNTED) this.counts.clear();
      this.counts.set(text, seen);
      return undefined;
    }
    this.counts.delete(text);
    const name = `berth_${createHash("sha1").update(text).digest("hex").slice(0, 24)}`;
    this.names.set(text, name);
    return name;
  }
}

const names = new StatementNames();

type QueryFn = (...args: unknown[]) => unknown;

/** PostgreSQL refused a prepared statement whose result columns changed (SQLSTATE 0A000): nothing was done, safe to run again. */
export function isStalePreparedStatement(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === "0A000" && /cached plan must not change result type/.test(String((err as { message?: unknown }).message));
}

/** The private per-connection record of prepared names in pg's Connection (pg 8). */
interface PreparedRegistry {
  parsedStatements?: Record<string, unknown>;
}

/**
 * Makes every connection of `pool` run hot parameterised statements as named prepared
 * statements. Kysely calls `client.query(text, values)` and awaits the promise; that form is
 * the one rewritten, every other form passes through untouched. A connection whose pg
 * internals lack the record of prepared names (a future pg) runs everything unnamed: a name
 * could not be forgotten after a schema change.
 */
export function preparePoolStatements(pool: pg.Pool): void {
  pool.on("connect", (client: pg.PoolClient) => {
    const parsed = (client as unknown as { connection?: PreparedRegistry }).connection?.parsedStatements;
    if (parsed === undefined) return;
    const query = client.query.bind(client) as QueryFn;
    /** Names whose statement changed shape and could not be deallocated yet (inside an aborted transaction). */
    const stale = new Set<string>();
    const forget = async (name: string): Promise<void> => {
      await query(`DEALLOCATE ${name}`);
      stale.delete(name);
      delete parsed[name];
    };
    const named = async (name: string, text: string, values: unknown[]): Promise<unknown> => {
      if (stale.has(name)) await forget(name);
      try {
        return await query({ name, text, values });
      } catch (err) {
        if (!isStalePreparedStatement(err)) throw err;
        // Inside a transaction the error aborted it, DEALLOCATE fails too and the error is the
        // caller's (unit-of-work runs such a transaction again): the name is replaced before its
        // next use on this connection, so the connection never keeps failing for it.
        stale.add(name);
        try {
          await forget(name);
        } catch {
          throw err;
        }
        return query(text, values);
      }
    };
    (client as unknown as { query: QueryFn }).query = (...args: unknown[]) => {
      const [text, values] = args;
      if (args.length !== 2 || typeof text !== "string" || !Array.isArray(values) || values.length === 0) return query(...args);
      const name = names.nameOf(text);
      return name === undefined ? query(text, values) : named(name, text, values);
    };
  });
}
