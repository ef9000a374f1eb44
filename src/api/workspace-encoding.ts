/**
 * GetWorkspace's answer with the Workspace encoded once per state of the workspace, not per call.
 * Between two reads of a live workspace only last_active_at moves (the read itself touches it),
 * so the other sixteen fields' encoding is kept beside the workspace and reused while they are
 * unchanged; each call encodes last_active_at alone and appends it (a decoder takes a message's
 * fields in any order). What counts as unchanged is decided on workspaceToWire's own output, so
 * the fields of the message stay in one place (wire.ts). Connect, which encodes the message
 * itself, gets an ordinary message built from the kept one.
 */
import { create, toBinary, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { WorkspaceSchema } from "../../gen/berth/v1/types_pb.js";
import { GetWorkspaceResponseSchema } from "../../gen/berth/v1/workspace_service_pb.js";
import type { Workspace } from "../sessions/workspace.js";
import { keepEncoding } from "./constant-message.js";
import { workspaceToWire } from "./wire.js";

type WorkspaceInit = MessageInitShape<typeof WorkspaceSchema>;

interface Kept {
  /** workspaceToWire's fields but last_active_at, as they were when `bytes` was encoded. */
  readonly rest: WorkspaceInit;
  readonly message: MessageShape<typeof WorkspaceSchema>;
  readonly bytes: Uint8Array;
}

const kept = new WeakMap<Workspace, Kept>();
const WORKSPACE_FIELD = GetWorkspaceResponseSchema.field.workspace.number;
const LAST_ACTIVE_FIELD = WorkspaceSchema.field.lastActiveAt.number;

export function getWorkspaceResponse(ws: Workspace): MessageShape<typeof GetWorkspaceResponseSchema> {
  const { lastActiveAt, ...rest } = workspaceToWire(ws);
  let k = kept.get(ws);
  if (k === undefined || !same(k.rest, rest)) {
    const message = create(WorkspaceSchema, rest);
    k = { rest, message, bytes: toBinary(WorkspaceSchema, message) };
    kept.set(ws, k);
  }
  const at = create(TimestampSchema, lastActiveAt);
  const response = create(GetWorkspaceResponseSchema, { workspace: { ...k.message, lastActiveAt: at } });
  const w = new BinaryWriter().tag(WORKSPACE_FIELD, WireType.LengthDelimited).fork().raw(k.bytes);
  w.tag(LAST_ACTIVE_FIELD, WireType.LengthDelimited).bytes(toBinary(TimestampSchema, at));
  keepEncoding(response, w.join().finish());
  return response;
}

/** Structural equality of message inits: scalars, bigints, enums, and nested messages (Timestamps). */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((key) => same((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]));
}
