/**
 * Which real services the tests can use, and the gates for the tests that need them. On a fresh
 * machine without PostgreSQL or nats-server the gated tests are skipped, each with one line
 * naming it and what is missing (and a summary at the end, test/support/skip-summary.ts); with
 * BERTH_REQUIRE_SERVICES=1 (CI) a missing service fails the run instead, so nothing is skipped.
 */
import { existsSync } from "node:fs";
import net from "node:net";
import { sandboxUnavailable } from "../../src/platform/sandbox.js";
import { TestRunner, describe, it, type TestFunction, type TestOptions } from "vitest";
import "./task-meta.js";

export const REQUIRE_SERVICES = process.env.BERTH_REQUIRE_SERVICES === "1";

/** The PostgreSQL server tests create their databases on. */
export const POSTGRES_URL = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
export const NATS_URL = process.env.NATS_URL || "nats://127.0.0.1:4222";
/** The nats-server binary tests launch their own JetStream servers with (test/events/helpers.ts). */
export const NATS_SERVER = process.env.NATS_SERVER_BIN ?? "/usr/sbin/nats-server";

function reachable(url: string, defaultPort: number): Promise<boolean> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: u.hostname || "127.0.0.1", port: Number(u.port || defaultPort) });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

async function available(name: string, url: string, port: number): Promise<boolean> {
  if (await reachable(url, port)) return true;
  if (REQUIRE_SERVICES) throw new Error(`${name} is not reachable at ${url}, and BERTH_REQUIRE_SERVICES=1 forbids skipping`);
  return false;
}

export const postgresAvailable = await available("PostgreSQL", POSTGRES_URL, 5432);
export const natsAvailable = await available("NATS", NATS_URL, 4222);
export const natsServerAvailable = existsSync(NATS_SERVER);
/** The Chromium the console tests drive through playwright-core (test/console; Debian's `chromium`, which .ci/run installs). */
export const CHROMIUM = process.env.BERTH_CHROMIUM_BIN ?? "/usr/bin/chromium";
export const chromiumAvailable = existsSync(CHROMIUM);
/** Why bubblewrap cannot build berth run's sandbox here (the server's checks on VERIFYING run in it); undefined when it can. */
export const sandboxMissing = sandboxUnavailable();

/** What a test needs beyond the embedded, in-memory PGlite. */
export interface Requirements {
  /**
   * A PostgreSQL server (DATABASE_URL): for a database shared by two connections, two pools, two
   * servers or two processes, or for PostgreSQL-only behaviour (concurrent transactions, advisory
   * locks across connections). In-memory PGlite has one connection.
   */
  readonly postgres?: boolean;
  /** The NATS server at NATS_URL. */
  readonly nats?: boolean;
  /** The nats-server binary (NATS_SERVER_BIN), for tests that launch a private JetStream server. */
  readonly natsServer?: boolean;
  /** The chromium binary (BERTH_CHROMIUM_BIN), for the web console's browser tests. */
  readonly chromium?: boolean;
  /** bubblewrap able to build a sandbox (Debian's `bubblewrap`, which .ci/run installs), for checks on VERIFYING. */
  readonly bwrap?: boolean;
}

/** What of `req` this machine lacks, as "no X at Y" phrases; throws instead under BERTH_REQUIRE_SERVICES=1. */
function missingFor(req: Requirements, what: string, file = fileName()): string[] {
  what = `${file} > ${what}`;
  const missing: string[] = [];
  if (req.postgres && !postgresAvailable) missing.push(`no PostgreSQL at ${POSTGRES_URL}`);
  if (req.nats && !natsAvailable) missing.push(`no NATS at ${NATS_URL}`);
  if (req.natsServer && !natsServerAvailable) missing.push(`no nats-server at ${NATS_SERVER}`);
  if (req.chromium && !chromiumAvailable) missing.push(`no chromium at ${CHROMIUM}`);
  if (req.bwrap && sandboxMissing) missing.push(`no bwrap sandbox at this host: ${sandboxMissing}`);
  if (missing.length > 0 && REQUIRE_SERVICES) {
    throw new Error(`${what}: ${missing.join(", ")}, and BERTH_REQUIRE_SERVICES=1 forbids skipping`);
  }
  return missing;
}

function fileName(): string {
  return TestRunner.getCurrentSuite().file?.name ?? "?";
}

function warnSkipped(missing: readonly string[], name: string, file = fileName()): void {
  console.warn(`*** SKIPPED (${missing.join(", ")}): ${file} > ${name} ***`);
}

/** "no PostgreSQL at postgres://…" → "no PostgreSQL": the summary's grouping key. */
function short(missing: readonly string[]): string {
  return missing.map((m) => m.replace(/ at .*/, "")).join(", ");
}

export interface Gate {
  /** describe(), skipped (with a line saying why) when a requirement is missing. */
  (name: string, factory: () => void): void;
  /** it(), skipped (with a line saying why) when a requirement is missing. */
  it(name: string, fn: TestFunction, timeout?: number): void;
}

/**
 * A describe/it gate for tests that need more than PGlite:
 *   needs({ postgres: true })("two instances on one database", () => { … });
 *   needs({ postgres: true, natsServer: true }).it("…", async () => { … });
 * Skipped tests carry meta.skippedFor, which the end-of-run summary groups by.
 */
export function needs(req: Requirements): Gate {
  const options = (missing: readonly string[]): TestOptions =>
    missing.length > 0 ? { skip: true, meta: { skippedFor: short(missing) } } : {};
  const gate = (name: string, factory: () => void): void => {
    const missing = missingFor(req, name);
    if (missing.length > 0) warnSkipped(missing, name);
    describe(name, options(missing), factory);
  };
  gate.it = (name: string, fn: TestFunction, timeout?: number): void => {
    const missing = missingFor(req, name);
    if (missing.length > 0) warnSkipped(missing, name);
    it(name, { ...options(missing), ...(timeout === undefined ? {} : { timeout }) }, fn);
  };
  return gate;
}

/**
 * For a test that runs either way but checks one thing only with `req` (e.g. the JetStream half
 * of an end-to-end test): whether it is there, and options for it() that mark the test as partly
 * skipped when not, so the end-of-run summary names it.
 */
export function optional(req: Requirements, check: string): { readonly ok: boolean; readonly options: TestOptions } {
  const missing = missingFor(req, check);
  if (missing.length === 0) return { ok: true, options: {} };
  console.warn(`*** PARTLY SKIPPED (${missing.join(", ")}): ${fileName()}: ${check} is not checked ***`);
  return { ok: false, options: { meta: { partlySkipped: `${short(missing)}: ${check}` } } };
}

/**
 * needs() for a whole file, from a runner (test/support/instances-runner.ts), which skips its
 * tests: what of `req` is missing, as meta.skippedFor has it ("no PostgreSQL"), after the same
 * line needs() writes (naming the file and `what`); undefined when nothing is. Throws instead
 * under BERTH_REQUIRE_SERVICES=1.
 */
export function fileSkippedFor(file: string, req: Requirements, what: string): string | undefined {
  const missing = missingFor(req, what, file);
  if (missing.length === 0) return undefined;
  warnSkipped(missing, what, file);
  return short(missing);
}
