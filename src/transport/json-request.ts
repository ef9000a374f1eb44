/**
 * Strict reading of JSON requests (Connect's JSON codec on the HTTP port). connect-node reads JSON
 * leniently by default: an unknown field or an enum name that does not exist is dropped, and the
 * handler then sees the field as unset ("invalid mode: required"), which hides the caller's typo.
 * Here an unknown field or enum name is refused before the handler runs, as INVALID_ARGUMENT with a
 * BadRequest naming the field, the bad value and what is allowed.
 */
import { fromJsonString, type DescField, type DescMessage } from "@bufbuild/protobuf";
import type { FieldViolation } from "../platform/errors.js";

/** Names of fields whose JSON form is not an object of fields (well-known types): not walked. */
function isWellKnown(schema: DescMessage): boolean {
  return schema.typeName.startsWith("google.protobuf.");
}

function fieldFor(schema: DescMessage, key: string): DescField | undefined {
  return schema.fields.find((f) => f.jsonName === key || f.name === key);
}

function enumViolation(field: DescField, path: string, value: unknown): FieldViolation | undefined {
  const e = field.fieldKind === "enum" ? field.enum : field.fieldKind === "list" && field.listKind === "enum" ? field.enum : undefined;
  if (e === undefined || typeof value !== "string") return undefined;
  if (e.values.some((v) => v.name === value)) return undefined;
  const allowed = e.values.filter((v) => v.number !== 0).map((v) => v.name);
  return { field: path, reason: "UNKNOWN_ENUM_VALUE", description: `unknown value ${JSON.stringify(value)}; allowed: ${allowed.join(", ")}` };
}

/** Unknown fields and unknown enum names of a JSON request, as field violations (proto field paths). */
export function jsonViolations(schema: DescMessage, json: unknown, prefix = ""): FieldViolation[] {
  const out: FieldViolation[] = [];
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    if (prefix === "") out.push({ field: "", reason: "INVALID_JSON", description: "the request must be a JSON object" });
    return out;
  }
  for (const [key, value] of Object.entries(json as Record<string, unknown>)) {
    const field = fieldFor(schema, key);
    if (field === undefined) {
      const known = schema.fields.map((f) => f.name).join(", ");
      out.push({ field: prefix + key, reason: "UNKNOWN_FIELD", description: `unknown field ${JSON.stringify(key)} of ${schema.typeName}; known: ${known}` });
      continue;
    }
    const path = prefix + field.name;
    const items = field.fieldKind === "list" && Array.isArray(value) ? value : [value];
    items.forEach((item, i) => {
      const at = field.fieldKind === "list" && Array.isArray(value) ? `${path}[${i}]` : path;
      const bad = enumViolation(field, at, item);
      if (bad !== undefined) out.push(bad);
      const child = field.fieldKind === "message" ? field.message : field.fieldKind === "list" && field.listKind === "message" ? field.message : undefined;
      if (child !== undefined && !isWellKnown(child) && item !== null) out.push(...jsonViolations(child, item, `${at}.`));
    });
  }
  return out;
}

/**
 * Checks a JSON request body against its message: returns the body's text when it reads strictly,
 * else the violations (unknown fields and enum names by name; anything else protobuf-es refuses,
 * such as a string where a number belongs, as one INVALID_JSON violation with its message).
 */
export function readJsonRequest(schema: DescMessage, text: string): { ok: true } | { ok: false; violations: FieldViolation[] } {
  try {
    fromJsonString(schema, text, { ignoreUnknownFields: false });
    return { ok: true };
  } catch (err) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (syntax) {
      return { ok: false, violations: [{ field: "", reason: "INVALID_JSON", description: `not JSON: ${(syntax as Error).message}` }] };
    }
    const found = jsonViolations(schema, parsed);
    return { ok: false, violations: found.length > 0 ? found : [{ field: "", reason: "INVALID_JSON", description: (err as Error).message }] };
  }
}
