/**
 * A refused RPC as an MCP tool result: `isError: true` and text an agent (an LLM) can act on —
 * the status code, the server's machine-readable reason, its message, its details, and what to
 * do next. A domain refusal is an answer, not a protocol failure, so it never becomes a
 * JSON-RPC error. The text is made from what the server sent: no rule is decided here.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";

/** "FailedPrecondition" → "FAILED_PRECONDITION", the name the RPC's own docs and errors.md use. */
export function codeName(code: Code): string {
  return (Code[code] ?? "Unknown").replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

/** What to do next, for the reasons an agent meets in its ordinary work. */
const NEXT_STEP: Readonly<Record<string, string>> = {
  SESSION_STRANDED: "The session was stranded (its overlay and changeset are kept). Call resume_session to continue under a new session id; nothing else runs on a stranded session.",
  STALE_OVERLAY: "Another session's change of this path went up for review after you read it: read_file it again, merge your change into what you read, and write with that read's hash as expected_hash.",
  SYMBOL_LOCKED: "Another agent holds a claim on it: work on something else, or ask that agent (describe_other_modifiers, list_claims) and try again after it releases the claim.",
  HASH_MISMATCH: "The file changed since you read it: read_file it again and write with the new hash as expected_hash.",
  NOT_SESSION_OWNER: "This session belongs to another agent: use a session of your own (create_session).",
  TOKEN_MISSING: "Set BERTH_TOKEN (stdio) or send `Authorization: Bearer <token>` (HTTP).",
};

export interface Refusal {
  readonly code: string;
  readonly reason: string | undefined;
  readonly message: string;
  readonly details: Readonly<Record<string, string>>;
}

/** The refusal a ConnectError carries (code, ErrorInfo reason and metadata). */
export function refusalOf(err: ConnectError): Refusal {
  const info = err.findDetails(ErrorInfoSchema)[0];
  return { code: codeName(err.code), reason: info?.reason, message: err.rawMessage, details: info?.metadata ?? {} };
}

/** The tool result of a refusal. */
export function refusalResult(refusal: Refusal): CallToolResult {
  const head = `${refusal.code}${refusal.reason ? ` ${refusal.reason}` : ""}: ${refusal.message}`;
  const lines = [head];
  if (Object.keys(refusal.details).length > 0) lines.push(`details: ${JSON.stringify(refusal.details)}`);
  const next = refusal.reason !== undefined ? NEXT_STEP[refusal.reason] : undefined;
  if (next !== undefined) lines.push(next);
  return { isError: true, content: [{ type: "text", text: lines.join("\n") }], structuredContent: { error: { ...refusal } } };
}

/** A refusal made by the MCP side itself (no session bound): the same shape as the server's. */
export function localRefusal(code: string, reason: string, message: string, details: Record<string, string> = {}): CallToolResult {
  return refusalResult({ code, reason, message, details });
}

/** Runs one tool: an RPC's refusal becomes the tool's error result; anything else propagates. */
export async function answered(work: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ConnectError) return refusalResult(refusalOf(err));
    throw err;
  }
}
