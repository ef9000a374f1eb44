/**
 * Request validation: each handler describes its fields with a Check, which collects every
 * violation and throws one INVALID_ARGUMENT naming them all (google.rpc.BadRequest).
 * Hand-written rather than protovalidate: the rules are few, run on the hottest paths, and
 * need no CEL interpreter (docs/decisions.md).
 */
import { invalidArgument, type FieldViolation } from "../platform/errors.js";
import { normalisePath } from "../overlay/paths.js";
import { uuidPrefixBounds, type UuidBounds } from "../platform/uuid.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// eslint-disable-next-line no-control-regex -- rejecting the ASCII controls (C0 and DEL) is the point; \p{Cc} would also take C1
const CONTROL = /[\u0000-\u001f\u007f]/;
const SHA256_HEX = /^[0-9a-f]{64}$/;

export const LIMITS = {
  repoName: 200,
  agentId: 128,
  agentName: 64,
  intent: 4096,
  baseCommit: 256,
  sourcePath: 4096,
  remoteUrl: 4096,
  reason: 1024,
  commitMessage: 65_536,
  commitAuthor: 256,
  targetRef: 1024,
  symbol: 1024,
  /** A review comment's text (AddComment). */
  commentBody: 10_000,
  captureExcludePatterns: 100,
  captureExcludePattern: 200,
  /** Hex digits an id prefix needs at least (ResolveIdPrefix): 1 in 65536 of the ids, so one agent's few. */
  idPrefixDigits: 4,
} as const;

interface TextRule {
  readonly max: number;
  readonly required?: boolean;
  readonly pattern?: RegExp;
  readonly patternDescription?: string;
  readonly allowNewlines?: boolean;
}

export class Check {
  private readonly violations: FieldViolation[] = [];

  /** Records a violation of a rule the handler checks itself (counts, combinations). */
  add(field: string, reason: string, description: string): undefined {
    this.violations.push({ field, reason, description });
    return undefined;
  }

  /** A UUID, returned lower-cased (the canonical form every map is keyed by). */
  uuid(field: string, value: string, required = true): string | undefined {
    if (value === "") return required ? this.add(field, "REQUIRED", "required") : undefined;
    if (!UUID.test(value)) return this.add(field, "INVALID_UUID", "must be a UUID such as 0b1c5e8e-4a3b-4f7e-9d2a-6c1e2f3a4b5c");
    return value.toLowerCase();
  }

  /** The start of a UUID's text (ResolveIdPrefix), as the range of UUIDs it names. */
  uuidPrefix(field: string, value: string): UuidBounds | undefined {
    if (value === "") return this.add(field, "REQUIRED", "required");
    const bounds = uuidPrefixBounds(value);
    if (!bounds) return this.add(field, "INVALID_FORMAT", `must be the start of a UUID such as 0b1c5e8e-4a3b-4f7e-9d2a-6c1e2f3a4b5c (hex digits, dashes where a UUID has them), got "${value}"`);
    const digits = value.replace(/-/g, "").length;
    if (digits < LIMITS.idPrefixDigits) return this.add(field, "TOO_SHORT", `at least ${LIMITS.idPrefixDigits} hex digits, got "${value}"`);
    return bounds;
  }

  text(field: string, value: string, rule: TextRule): string | undefined {
    if (value === "") return rule.required ? this.add(field, "REQUIRED", "required") : undefined;
    if (value.length > rule.max) return this.add(field, "TOO_LONG", `at most ${rule.max} characters, got ${value.length}`);
    if (!rule.allowNewlines && CONTROL.test(value)) return this.add(field, "CONTROL_CHARACTER", "must not contain control characters");
    // eslint-disable-next-line no-control-regex -- the ASCII controls other than tab, LF and CR, matched on purpose
    if (rule.allowNewlines && /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(value)) {
      return this.add(field, "CONTROL_CHARACTER", "must not contain control characters other than newlines and tabs");
    }
    if (rule.pattern && !rule.pattern.test(value)) return this.add(field, "INVALID_FORMAT", rule.patternDescription ?? `must match ${rule.pattern}`);
    return value;
  }

  /** A known, non-zero value of a protobuf enum (open enums decode unknown numbers as-is). */
  enumValue<E extends number>(field: string, value: E, known: Readonly<Record<number, unknown>>, required = true): E | undefined {
    if (value === 0) return required ? this.add(field, "REQUIRED", "required") : undefined;
    if (!(value in known)) return this.add(field, "UNKNOWN_ENUM_VALUE", `unknown value ${value}`);
    return value;
  }

  range(field: string, value: number, min: number, max: number): number {
    if (value < min || value > max) this.add(field, "OUT_OF_RANGE", `must be between ${min} and ${max}, got ${value}`);
    return value;
  }

  /** A repository-relative path of the overlay, normalised (src/overlay/paths.ts says what is refused). */
  path(field: string, raw: string, allowEmpty = false): string | undefined {
    const r = normalisePath(field, raw, { allowEmpty });
    if (r.ok) return r.path;
    this.violations.push(r.violation);
    return undefined;
  }

  /** A sha256 in hex, returned lower-cased; empty or absent is returned as it is. */
  hash(field: string, value: string | undefined): string | undefined {
    if (value === undefined || value === "") return value;
    const v = value.toLowerCase();
    if (!SHA256_HEX.test(v)) this.add(field, "INVALID_HASH", "must be a sha256 in hex (64 characters) or empty");
    return v;
  }

  /** A symbol name (as the symbol extractors name them): bounded, no control characters. */
  symbol(field: string, value: string): string {
    if (value.length > LIMITS.symbol) this.add(field, "TOO_LONG", `at most ${LIMITS.symbol} characters`);
    else if (CONTROL.test(value)) this.add(field, "CONTROL_CHARACTER", "must not contain control characters");
    return value;
  }

  /** Throws INVALID_ARGUMENT listing every violation, if any. */
  done(): void {
    if (this.violations.length > 0) throw invalidArgument(this.violations);
  }
}

export const AGENT_ID = { max: LIMITS.agentId, pattern: /^[A-Za-z0-9][A-Za-z0-9._:@/-]*$/, patternDescription: "letters, digits and . _ : @ / - (starting with a letter or digit)" };
export const AGENT_NAME = { max: LIMITS.agentName, pattern: /^[A-Za-z0-9][A-Za-z0-9._-]*$/, patternDescription: "letters, digits and . _ - (starting with a letter or digit)" };
export const REQUEST_ID = { max: 200, pattern: /^[A-Za-z0-9._:-]+$/, patternDescription: "letters, digits and . _ : - (a UUID, say)" };
