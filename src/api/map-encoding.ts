/**
 * A workspace map's wire form made once per map, not per turn. A map of 1,000 entries is a
 * thousand MapEntry messages and some 40 KB of text; BeginTurn answered it with every warm
 * turn, and creating and encoding it again each time was a third of the server's part of a
 * warm BeginTurn. A map (turns/map) is immutable and cached by root, so its message and bytes
 * are kept beside it (WeakMap: they go with the map) for each status it is answered with. The
 * fields are mapToWire's; responses carrying a kept map get their other
 * fields encoded per call and the map's bytes appended (a decoder takes fields in any order).
 */
import { create, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { MapStatus, WorkspaceMapSchema } from "../../gen/berth/v1/turn_service_pb.js";
import type { MapResult, WorkspaceMap } from "../turns/map/index.js";
import { keepEncoding } from "./constant-message.js";

type MapMessage = MessageShape<typeof WorkspaceMapSchema>;
interface Kept {
  readonly message: MapMessage;
  readonly bytes: Uint8Array;
}

/** Per map: the kept form for each (status, reason) it was answered with (ok, stale: why). */
const kept = new WeakMap<WorkspaceMap, Map<string, Kept>>();

function keptMap(r: MapResult): Kept | undefined {
  if (r.status !== "ok" && r.status !== "stale") return undefined;
  const key = r.status === "ok" ? "ok" : `stale:${r.why}`;
  let forMap = kept.get(r.map);
  const found = forMap?.get(key);
  if (found !== undefined) return found;
  const message = Object.freeze(create(WorkspaceMapSchema, mapToWire(r))) as MapMessage;
  const k = { message, bytes: toBinary(WorkspaceMapSchema, message) };
  if (forMap === undefined) kept.set(r.map, (forMap = new Map()));
  forMap.set(key, k);
  return k;
}

/**
 * `schema`'s response with `fields` and the map `r` in its field `mapField`: created with the
 * kept map message and, for the gRPC bridge, encoded from the kept bytes. A result without a
 * map (over budget, skipped, …) is small and made as usual.
 */
export function responseWithMap<T extends DescMessage>(
  schema: T,
  fields: MessageInitShape<T>,
  mapField: string,
  r: MapResult,
): MessageShape<T> {
  const k = keptMap(r);
  if (k === undefined) return create(schema, { ...fields, [mapField]: mapToWire(r) });
  const field = schema.field[mapField];
  if (field === undefined) throw new Error(`${schema.typeName} has no field ${mapField}`);
  const response = create(schema, { ...fields, [mapField]: k.message });
  const rest = toBinary(schema, create(schema, fields));
  const w = new BinaryWriter().raw(rest).tag(field.number, WireType.LengthDelimited).bytes(k.bytes);
  keepEncoding(response, w.finish());
  return response;
}

/** The wire form of a map result: the one place its fields are filled. */
export function mapToWire(r: MapResult): MessageInitShape<typeof WorkspaceMapSchema> {
  switch (r.status) {
    case "ok":
    case "stale": {
      const m = r.map;
      return {
        status: r.status === "ok" ? MapStatus.OK : MapStatus.STALE,
        text: m.text,
        entries: m.entries.map((e) => ({ path: e.path, isDir: e.isDir })),
        shown: m.shown,
        total: m.total,
        reason: r.status === "stale" ? r.why : "",
      };
    }
    case "over_budget":
      return { status: MapStatus.OVER_BUDGET, reason: "the walk did not finish within BERTH_MAP_BUDGET_MS" };
    case "skipped":
      return { status: MapStatus.SKIPPED, reason: r.reason };
    case "cancelled":
      return { status: MapStatus.CANCELLED, reason: "the turn was cancelled" };
    case "failed":
      return { status: MapStatus.FAILED, reason: `${r.code}: ${r.message}` };
  }
}
