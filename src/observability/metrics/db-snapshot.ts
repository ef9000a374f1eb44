/**
 * A periodically refreshed snapshot of the aggregates that live in the database, so that a
 * scrape never queries it. Each refresh is four small statements, each served by an index
 * (workspaces_stranded_at and workspaces_ended, claims' primary key, events' seq unique index,
 * outbox_head/relay_cursor rows); refreshes never overlap, and a failed one keeps
 * the previous values (berth_metrics_snapshot_age_seconds shows how old they are).
 */
import { sql } from "kysely";
import type { Logger } from "pino";
import type { Db } from "../../platform/database.js";

export interface SnapshotOptions {
  readonly db: Db;
  readonly logger: Logger;
  readonly relayStream: string | undefined;
  readonly intervalMs: number;
}

export interface RepoCount {
  readonly repoId: string;
  readonly count: number;
}

export class DbSnapshot {
  workspaces: (RepoCount & { readonly state: string })[] = [];
  claims: RepoCount[] = [];
  outbox: { readonly unsequenced: number; readonly headSeq: number } | undefined;
  relay: { readonly stream: string; readonly unpublished: number; readonly lagSeconds: number | undefined } | undefined;
  /** Date.now() of the last successful refresh. */
  refreshedAt: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private failing = false;

  constructor(private readonly o: SnapshotOptions) {}

  start(): void {
    if (this.timer) return;
    // Not awaited: start() does not wait for the database, and refresh() never rejects (read()
    // logs a failure and keeps the previous values); stop() awaits the refresh in flight.
    void this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.o.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** Refreshes now (or joins the refresh in progress). Never throws. */
  refresh(): Promise<void> {
    this.running ??= this.read().finally(() => (this.running = undefined));
    return this.running;
  }

  private async read(): Promise<void> {
    const db = this.o.db;
    try {
      // One branch per state: each is served by its partial index (an IN list would not be).
      const ws = await sql<{ repo_id: string; lifecycle: string; n: number | string }>`
        SELECT repo_id, 'stranded' AS lifecycle, count(*) AS n FROM workspaces WHERE lifecycle = 'stranded' GROUP BY repo_id
        UNION ALL
        SELECT repo_id, 'abandoned', count(*) FROM workspaces WHERE lifecycle = 'abandoned' GROUP BY repo_id`.execute(db);
      const claims = await sql<{ repo_id: string; n: number | string }>`SELECT repo_id, count(*) AS n FROM claims GROUP BY repo_id`.execute(db);
      const outbox = await sql<{ unsequenced: number | string; head: number | string; newest: Date | string | null }>`
        SELECT (SELECT count(*) FROM events WHERE seq IS NULL) AS unsequenced,
               (SELECT last_seq FROM outbox_head WHERE id = 1) AS head,
               (SELECT e.occurred_at FROM events e WHERE e.seq = (SELECT last_seq FROM outbox_head WHERE id = 1)) AS newest`.execute(db);
      const o = outbox.rows[0]!;
      const unsequenced = Number(o.unsequenced);
      const headSeq = Number(o.head ?? 0);
      let relay: DbSnapshot["relay"];
      const stream = this.o.relayStream;
      if (stream !== undefined) {
        const r = await sql<{ last_seq: number | string; occurred_at: Date | string | null }>`
          SELECT c.last_seq, e.occurred_at FROM relay_cursor c LEFT JOIN events e ON e.seq = c.last_seq
          WHERE c.stream = ${stream}`.execute(db);
        const row = r.rows[0];
        const published = Number(row?.last_seq ?? 0);
        const unpublished = Math.max(0, headSeq - published) + unsequenced;
        let lagSeconds: number | undefined = 0;
        if (unpublished > 0) {
          const newest = o.newest === null ? undefined : new Date(o.newest).getTime();
          const last = row?.occurred_at ? new Date(row.occurred_at).getTime() : undefined;
          // Nothing published yet (or its event was pruned): the lag is unknown, not zero.
          lagSeconds = newest !== undefined && last !== undefined ? Math.max(0, (newest - last) / 1000) : undefined;
        }
        relay = { stream, unpublished, lagSeconds };
      }
      this.workspaces = ws.rows.map((r) => ({ repoId: r.repo_id, state: r.lifecycle, count: Number(r.n) }));
      this.claims = claims.rows.map((r) => ({ repoId: r.repo_id, count: Number(r.n) }));
      this.outbox = { unsequenced, headSeq };
      this.relay = relay;
      this.refreshedAt = Date.now();
      if (this.failing) this.o.logger.info("metrics: database snapshot refreshed again");
      this.failing = false;
    } catch (err) {
      if (!this.failing) this.o.logger.warn({ err }, "metrics: database snapshot failed; gauges keep their previous values");
      this.failing = true;
    }
  }
}
