/**
 * Fair use of an instance: how many calls one authenticated agent may have in flight on it at
 * once (BERTH_MAX_CALLS_PER_AGENT), and how many streams it may hold open
 * (BERTH_MAX_STREAMS_PER_AGENT). Both transports run every call through the one Pipeline, which
 * asks here after authentication and gives the slot back when the call ends, whatever the port.
 *
 * Streams are counted apart from unary calls: a WatchEvents or AttachSession stream is open for
 * hours by design, and counting it with the unary calls would leave an agent that watches its
 * events fewer slots for its work; counting it not at all would let one agent hold thousands
 * of subscriptions. Calls without an agent identity (BERTH_AUTH=none, where agent ids come from
 * requests, and the public health service) are not counted: there is no one to be fair to.
 * Counted per instance, in memory: with N instances behind a balancer an agent may have up to
 * N × the limit in flight, which is what the limit protects — each instance's event loop,
 * connections and database pool.
 */
import type { Principal } from "../auth/principal.js";
import { QuotaExceeded } from "../platform/errors.js";

export interface CallLimitSettings {
  /** 0: no limit. */
  readonly maxCallsPerAgent: number;
  /** 0: no limit. */
  readonly maxStreamsPerAgent: number;
}

/**
 * The delay RetryInfo suggests: a unary call's slot is free again within milliseconds, a
 * stream's only when one of the agent's streams ends.
 */
export const CALL_RETRY_MS = 200;
export const STREAM_RETRY_MS = 5000;

export type SlotKind = "call" | "stream";

/** A held slot: what release() needs. */
export interface Slot {
  readonly kind: SlotKind;
  readonly agentId: string;
}

export class CallLimits {
  private readonly held: Record<SlotKind, Map<string, number>> = { call: new Map(), stream: new Map() };

  constructor(private readonly settings: CallLimitSettings) {}

  /** Takes a slot for the caller, or throws RESOURCE_EXHAUSTED TOO_MANY_CALLS / TOO_MANY_STREAMS; undefined when not counted. */
  acquire(principal: Principal, kind: SlotKind): Slot | undefined {
    const agentId = principal.agentId;
    if (agentId === undefined || principal.anonymous) return undefined;
    const limit = kind === "call" ? this.settings.maxCallsPerAgent : this.settings.maxStreamsPerAgent;
    if (limit <= 0) return undefined;
    const counts = this.held[kind];
    const n = counts.get(agentId) ?? 0;
    if (n >= limit) {
      const variable = kind === "call" ? "BERTH_MAX_CALLS_PER_AGENT" : "BERTH_MAX_STREAMS_PER_AGENT";
      const what = kind === "call" ? "calls in flight" : "open streams";
      throw new QuotaExceeded(
        kind === "call" ? "TOO_MANY_CALLS" : "TOO_MANY_STREAMS",
        `agent ${agentId} has ${n} ${what} on this instance, the limit (${variable}); retry when one has ended`,
        { agent_id: agentId, limit: String(limit), in_flight: String(n), quota: variable },
        [{ subject: `agent:${agentId}`, description: `${n} of ${limit} ${what} (${variable})` }],
        kind === "call" ? CALL_RETRY_MS : STREAM_RETRY_MS,
      );
    }
    counts.set(agentId, n + 1);
    return { kind, agentId };
  }

  release(slot: Slot): void {
    const counts = this.held[slot.kind];
    const n = (counts.get(slot.agentId) ?? 1) - 1;
    if (n <= 0) counts.delete(slot.agentId);
    else counts.set(slot.agentId, n);
  }

  /** Slots held now (tests, metrics). */
  inFlight(agentId: string, kind: SlotKind): number {
    return this.held[kind].get(agentId) ?? 0;
  }
}
