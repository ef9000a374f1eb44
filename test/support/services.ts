/**
 * Which real services the tests can use. On a fresh machine without PostgreSQL or NATS the
 * tests that need them are skipped, loudly; with BERTH_REQUIRE_SERVICES=1 (CI) a missing
 * service fails the run instead, so nothing is skipped there.
 */
import net from "node:net";

export const REQUIRE_SERVICES = process.env.BERTH_REQUIRE_SERVICES === "1";

/** The PostgreSQL server tests create their databases on. */
export const POSTGRES_URL = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
export const NATS_URL = process.env.NATS_URL || "nats://127.0.0.1:4222";

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
  const ok = await reachable(url, port);
  if (ok) return true;
  const message = `${name} is not reachable at ${url}`;
  if (REQUIRE_SERVICES) throw new Error(`${message}, and BERTH_REQUIRE_SERVICES=1 forbids skipping`);
  console.warn(`\n*** SKIPPED: ${message}; tests that need ${name} are skipped (set BERTH_REQUIRE_SERVICES=1 to fail instead) ***\n`);
  return false;
}

export const postgresAvailable = await available("PostgreSQL", POSTGRES_URL, 5432);
export const natsAvailable = await available("NATS", NATS_URL, 4222);
