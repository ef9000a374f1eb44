/**
 * What the unary and the streaming runner share about a handler's outcome: turning its result
 * into a Message, and the hook through which a transport turns an RpcStatus into what it
 * throws. A module of its own so that neither runner has to import the other.
 */
import { create, isMessage, type DescMessage, type Message } from "@bufbuild/protobuf";
import type { RpcStatus } from "./status.js";

/** Maps a transport-neutral RpcStatus into what a transport throws (identity for grpc-js). */
export type ErrorMapper = (status: RpcStatus) => unknown;
export const identity: ErrorMapper = (s) => s;

export function isThenable<T>(v: unknown): v is PromiseLike<T> {
  return v !== null && typeof v === "object" && typeof (v as { then?: unknown }).then === "function";
}

export function toMessage(schema: DescMessage, value: unknown): Message {
  if (isMessage(value, schema)) return value;
  return create(schema, value as never);
}
