/**
 * Several Berth instances on one PostgreSQL database behind a per-call load balancer, as the
 * tests see them. With BERTH_TEST_INSTANCES=2 (`npm run test:two-instances`) startBerth() and
 * startTurnBerth() start two servers on one database, and every client the suites use sends each
 * call to the next instance, round robin — a stream is a call: each new stream goes to the next
 * instance, and stays there.
 *
 * The balancer lives in the clients, so the suites need no change: a cluster registers here under
 * the addresses of its first instance (`server.grpcAddress`, `server.httpUrl`), and the client
 * helpers that are given one of those addresses rotate over the cluster —
 *   - createGrpcClient (test/support/grpc-client.ts): a grpc-js client per instance, one per call;
 *   - the Connect and gRPC-Web clients of startBerth: a Transport over one transport per instance;
 *   - the CLI helpers (test/cli/helpers.ts): each `berth …` process (and each `events watch`)
 *     gets the next instance's URL for --server / BERTH_SERVER.
 * One counter per cluster, shared by all its clients, as one balancer in front of it would be.
 * What bypasses these helpers (a raw fetch() of `server.httpUrl`, a client on `servers[1]`'s
 * address) reaches the one instance it names.
 */
import type { Transport } from "@connectrpc/connect";

/** How many instances startBerth() starts: BERTH_TEST_INSTANCES, default 1. */
export const TEST_INSTANCES = instancesFrom(process.env.BERTH_TEST_INSTANCES);

function instancesFrom(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === "") return 1;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 8) throw new Error(`BERTH_TEST_INSTANCES: expected a whole number from 1 to 8, got "${raw}"`);
  return n;
}

/** The instances of one cluster and the balancer's turn: which one the next call goes to. */
export class Rotation {
  private calls = 0;

  constructor(
    /** host:port of each instance's gRPC listener, the first instance first. */
    readonly grpcAddresses: readonly string[],
    /** http(s)://host:port of each instance's HTTP (Connect, gRPC-Web) listener. */
    readonly httpUrls: readonly string[],
  ) {
    if (grpcAddresses.length === 0 || grpcAddresses.length !== httpUrls.length) throw new Error("a rotation needs one gRPC address and one URL per instance");
  }

  get size(): number {
    return this.grpcAddresses.length;
  }

  /** The index of the instance that takes the next call (and advances the turn). */
  next(): number {
    const i = this.calls % this.size;
    this.calls++;
    return i;
  }
}

const clusters = new Map<string, Rotation>();

const key = (address: string) => address.replace(/\/+$/, "");

/** Makes the first instance's addresses mean the cluster, for the client helpers. */
export function registerCluster(rotation: Rotation): void {
  clusters.set(key(rotation.grpcAddresses[0]!), rotation);
  clusters.set(key(rotation.httpUrls[0]!), rotation);
}

export function unregisterCluster(rotation: Rotation): void {
  for (const a of [rotation.grpcAddresses[0]!, rotation.httpUrls[0]!]) if (clusters.get(key(a)) === rotation) clusters.delete(key(a));
}

/** The cluster whose first instance listens at `address` (a gRPC host:port or an HTTP URL), if it has several instances. */
export function clusterAt(address: string): Rotation | undefined {
  const r = clusters.get(key(address));
  return r && r.size > 1 ? r : undefined;
}

/** The URL the next call to `url` goes to: the next instance's when `url` is a cluster's, else `url`. */
export function nextHttpUrl(url: string): string {
  const r = clusterAt(url);
  return r ? r.httpUrls[r.next()]! : url;
}

/** A Connect Transport that sends each call (unary, or a whole stream) through the next of `transports`. */
export function rotatingTransport(rotation: Rotation, transports: readonly Transport[]): Transport {
  if (transports.length !== rotation.size) throw new Error("one transport per instance");
  const pick = () => transports[rotation.next()]!;
  return {
    unary: (method, signal, timeoutMs, header, input, contextValues) => pick().unary(method, signal, timeoutMs, header, input, contextValues),
    stream: (method, signal, timeoutMs, header, input, contextValues) => pick().stream(method, signal, timeoutMs, header, input, contextValues),
  };
}
