/**
 * LISTEN on a dedicated PostgreSQL connection: how a hub hears, within milliseconds, that
 * another instance's commits have been numbered (the sequencer's NOTIFY, src/delivery/sequencer.ts).
 *
 * The connection is its own `pg.Client`, not one of the pool's: LISTEN belongs to a session, so
 * it holds its connection for as long as the hub runs. When the connection drops (a server
 * restart, pg_terminate_backend, a network fault), the listener reconnects with capped
 * exponential backoff, LISTENs again and calls `onListening`: notifications sent while it was
 * away are lost, so the hub reads once then. Every `pingIntervalMs` it re-issues the LISTEN (a
 * no-op on a live session, and the `query` that pg_stat_activity keeps showing) with a
 * timeout, so a half-open connection is noticed and replaced rather than silently deaf.
 *
 * Notifications are a wake-up, never the data: a missed one costs latency (the hub's poll is the
 * safety net), not an event.
 */
import pg from "pg";
import type { Logger } from "pino";

export interface CommitListenerOptions {
  /** PostgreSQL connection string (the pool's). */
  readonly url: string;
  /** Channel to LISTEN on (a plain identifier). */
  readonly channel: string;
  readonly logger: Logger;
  /** A notification on the channel arrived; `payload` as sent. */
  readonly onNotify: (payload: string) => void;
  /** The LISTEN is (again) in place: whatever was notified before it was missed. */
  readonly onListening: () => void;
  /** First reconnect delay (default 100 ms), doubled per failed attempt up to backoffMaxMs (default 5,000 ms). */
  readonly backoffInitialMs?: number;
  readonly backoffMaxMs?: number;
  /** Connect timeout (default 5,000 ms). */
  readonly connectTimeoutMs?: number;
  /** How often the connection is checked (default 30,000 ms), and how long a check may take (default 5,000 ms). */
  readonly pingIntervalMs?: number;
  readonly pingTimeoutMs?: number;
}

/** application_name of the LISTEN connection, as pg_stat_activity shows it. */
export const LISTENER_APPLICATION_NAME = "berth-event-listener";

class Timeout extends Error {
  constructor(what: string, ms: number) {
    super(`${what} took more than ${ms} ms`);
    this.name = "Timeout";
  }
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Timeout(what, ms)), ms);
  });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

export class CommitListener {
  private readonly o: Required<CommitListenerOptions>;
  private client: pg.Client | undefined;
  private pid: number | undefined;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  /** The attempt in flight (start, reconnect), awaited by stop(). */
  private connecting: Promise<void> | undefined;
  private failures = 0;
  /** Successful connects so far (the first, then one per reconnect). */
  connects = 0;

  constructor(options: CommitListenerOptions) {
    if (!/^[a-z_][a-z0-9_]*$/.test(options.channel)) throw new Error(`not a plain channel name: ${options.channel}`);
    this.o = {
      backoffInitialMs: 100,
      backoffMaxMs: 5000,
      connectTimeoutMs: 5000,
      pingIntervalMs: 30_000,
      pingTimeoutMs: 5000,
      ...options,
    };
  }

  /** Whether the LISTEN is in place now. */
  get listening(): boolean {
    return this.client !== undefined;
  }

  /** Backend pid of the LISTEN connection, while listening. */
  get backendPid(): number | undefined {
    return this.client ? this.pid : undefined;
  }

  /**
   * Connects and LISTENs. Resolves after the first attempt: a failure is logged and retried in
   * the background with backoff (the hub still polls), so it never fails the server's start.
   */
  async start(): Promise<void> {
    if (this.connecting || this.client || this.stopped) return;
    await this.attempt();
  }

  /** UNLISTEN, end the connection, stop reconnecting; bounded even on a dead connection. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.pingTimer);
    await this.connecting;
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    try {
      await within(client.query(`UNLISTEN ${this.o.channel}`), this.o.pingTimeoutMs, "UNLISTEN");
    } catch (err) {
      this.o.logger.debug({ err }, "event listener: UNLISTEN failed at stop; ending the connection anyway");
    }
    await this.end(client);
  }

  private attempt(): Promise<void> {
    const p = this.connect().finally(() => {
      if (this.connecting === p) this.connecting = undefined;
    });
    this.connecting = p;
    return p;
  }

  private async connect(): Promise<void> {
    this.retryTimer = undefined;
    if (this.stopped) return;
    const client = new pg.Client({
      connectionString: this.o.url,
      connectionTimeoutMillis: this.o.connectTimeoutMs,
      keepAlive: true,
      application_name: LISTENER_APPLICATION_NAME,
    });
    // Without an 'error' listener a dropped connection would crash the process.
    client.on("error", (err) => this.lost(client, err));
    client.on("end", () => this.lost(client, new Error("the connection ended")));
    client.on("notification", (n) => {
      if (n.channel === this.o.channel && client === this.client) this.o.onNotify(n.payload ?? "");
    });
    try {
      await client.connect();
      // Before the LISTEN, which stays the connection's `query` in pg_stat_activity.
      const r = await within(client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid"), this.o.pingTimeoutMs, "SELECT pg_backend_pid()");
      this.pid = r.rows[0]?.pid;
      await within(client.query(`LISTEN ${this.o.channel}`), this.o.pingTimeoutMs, "LISTEN");
    } catch (err) {
      await this.end(client);
      this.retry(err);
      return;
    }
    if (this.stopped) {
      await this.end(client);
      return;
    }
    this.client = client;
    this.connects++;
    if (this.failures > 0) this.o.logger.info({ attempts: this.failures }, "event listener: listening again");
    this.failures = 0;
    clearInterval(this.pingTimer);
    this.pingTimer = setInterval(() => this.ping(client), this.o.pingIntervalMs);
    this.pingTimer.unref();
    this.o.onListening();
  }

  /** The connection `client` failed or ended: replace it, unless it is already replaced or we stop. */
  private lost(client: pg.Client, err: Error): void {
    if (client !== this.client || this.stopped) return;
    this.client = undefined;
    clearInterval(this.pingTimer);
    void this.end(client);
    this.retry(err);
  }

  private retry(err: unknown): void {
    if (this.stopped) return;
    this.failures++;
    const delay = Math.min(this.o.backoffMaxMs, this.o.backoffInitialMs * 2 ** Math.min(this.failures - 1, 16));
    const level = this.failures === 1 || this.failures % 10 === 0 ? "warn" : "debug";
    this.o.logger[level](
      { err, attempt: this.failures, retryInMs: delay },
      "event listener: not listening; reconnecting (other instances' commits arrive by the poll meanwhile)",
    );
    this.retryTimer = setTimeout(() => void this.attempt(), delay);
    this.retryTimer.unref();
  }

  private ping(client: pg.Client): void {
    within(client.query(`LISTEN ${this.o.channel}`), this.o.pingTimeoutMs, "the LISTEN check").catch((err: unknown) =>
      this.lost(client, err instanceof Error ? err : new Error(String(err))),
    );
  }

  /** Ends `client`, waiting at most pingTimeoutMs (end() itself destroys a dead or busy socket). */
  private async end(client: pg.Client): Promise<void> {
    try {
      await within(client.end(), this.o.pingTimeoutMs, "closing the connection");
    } catch (err) {
      this.o.logger.debug({ err }, "event listener: closing the connection failed");
    }
  }
}
