/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` header.
 *
 *   traceparent: 00-<trace-id 32 hex>-<parent-id 16 hex>-<flags 2 hex>
 *
 * Parsing is strict where the spec is (lowercase hex, no all-zero ids, version ff invalid) and
 * lenient where it asks to be (a future version may carry more fields after the flags).
 */
import { randomFillSync } from "node:crypto";

export interface TraceParent {
  readonly traceId: string;
  readonly parentSpanId: string;
  /** The sampled flag (bit 0 of trace-flags). */
  readonly sampled: boolean;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = "00000000000000000000000000000000";
const ZERO_SPAN = "0000000000000000";

/** The parsed header, or undefined when absent or invalid (an invalid header starts a new trace). */
export function parseTraceParent(header: string | undefined): TraceParent | undefined {
  if (header === undefined || header.length < 55) return undefined;
  const m = TRACEPARENT.exec(header.trim());
  if (m === null) return undefined;
  const [, version, traceId, parentSpanId, flags, rest] = m as unknown as [string, string, string, string, string, string | undefined];
  if (version === "ff") return undefined;
  if (version === "00" && rest !== undefined) return undefined;
  if (traceId === ZERO_TRACE || parentSpanId === ZERO_SPAN) return undefined;
  return { traceId, parentSpanId, sampled: (parseInt(flags, 16) & 1) === 1 };
}

// Ids come from a pooled random buffer: one getrandom call per 512 span ids.
const POOL = Buffer.alloc(4096);
let offset = POOL.length;

function randomHex(bytes: number): string {
  if (offset + bytes > POOL.length) {
    randomFillSync(POOL);
    offset = 0;
  }
  const s = POOL.toString("hex", offset, offset + bytes);
  offset += bytes;
  return s;
}

export function newSpanId(): string {
  const id = randomHex(8);
  return id === ZERO_SPAN ? newSpanId() : id;
}

export function newTraceId(): string {
  const id = randomHex(16);
  return id === ZERO_TRACE ? newTraceId() : id;
}
