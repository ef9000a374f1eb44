/**
 * Output for the berth command: aligned tables and key/value blocks for people, proto3 JSON for
 * scripts, colour (only on a TTY without NO_COLOR), a delayed spinner on stderr, and the exit
 * codes and error lines every subcommand shares.
 */
import { codeName } from "../transport/status.js";
import { toJson, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { BadRequestSchema, ConnectError, ErrorInfoSchema, isUnreachable, networkCause } from "@berth/client";

/** Exit codes: 1 the server refused or failed, 2 a usage error, 3 the server is unreachable. */
export const EXIT = { serverError: 1, usage: 2, unreachable: 3 } as const;

const DEFAULT_HTTP = "127.0.0.1:8080";

/** Thrown once the failure has been reported; main.ts exits with its code and prints nothing more. */
export class CliExit extends Error {
  constructor(readonly exitCode: number) {
    super(`exit ${exitCode}`);
    this.name = "CliExit";
  }
}

/** A usage error found after parsing (e.g. an unknown repository name): exit 2. */
export class UsageError extends Error {
  override name = "UsageError";
  /** For --json: USAGE, or what exactly (AMBIGUOUS_ID, NO_MATCHING_ID). */
  readonly reason: string;
  readonly details: Record<string, unknown>;
  /** Printed under the message, indented (for people; --json has the details). */
  readonly lines: readonly string[];

  constructor(message: string, options: { reason?: string; details?: Record<string, unknown>; lines?: readonly string[] } = {}) {
    super(message);
    this.reason = options.reason ?? "USAGE";
    this.details = options.details ?? {};
    this.lines = options.lines ?? [];
  }
}

function colourEnabled(stream: NodeJS.WriteStream): boolean {
  const noColor = process.env.NO_COLOR;
  return stream.isTTY === true && (noColor === undefined || noColor === "");
}

export const stdoutColour = colourEnabled(process.stdout);
export const stderrColour = colourEnabled(process.stderr);

/** A notice on stderr (progress, reconnects), never mixed into the output a script reads. */
export function note(text: string): void {
  process.stderr.write(`${paint("yellow", "berth:", stderrColour)} ${text}\n`);
}

const CODES = { red: 31, green: 32, yellow: 33, blue: 34, magenta: 35, cyan: 36, grey: 90, bold: 1, dim: 2 } as const;
export type Colour = keyof typeof CODES;

/** Paints text for stdout (plain when stdout is not a colour terminal). */
export function paint(colour: Colour | undefined, text: string, enabled = stdoutColour): string {
  return enabled && colour ? `\x1b[${CODES[colour]}m${text}\x1b[0m` : text;
}

// eslint-disable-next-line no-control-regex -- ANSI colour codes start with ESC (\x1b); matching it is the point
const ANSI = /\x1b\[[0-9;]*m/g;
const visibleLength = (s: string) => s.replace(ANSI, "").length;

/** An aligned table: a header row, then one row per item; the last column is not padded. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => visibleLength(r[i] ?? ""))));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c + " ".repeat(widths[i]! - visibleLength(c))))
      .join("  ")
      .trimEnd();
  return [line(headers.map((h) => paint("bold", h))), ...rows.map(line)].join("\n");
}

/** A key/value block, keys aligned. Empty values are shown as "-". */
export function keyValues(pairs: readonly (readonly [string, string])[]): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${paint("dim", k.padEnd(width))}  ${v === "" ? "-" : v}`).join("\n");
}

/** Proto3 JSON of a message, one line (stable: what toJson produces, enums as names). */
export function jsonLine<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): string {
  return JSON.stringify(toJson(schema, message));
}

export function print(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
}

/** "2025-05-01 12:34:56" (UTC), or "" when unset. */
export function formatTime(ts: Timestamp | undefined): string {
  if (!ts) return "";
  return timestampDate(ts).toISOString().replace("T", " ").slice(0, 19);
}

/** Strips a proto enum prefix: CHANGESET_STATE_DRAFT → DRAFT. */
export function enumName(names: Record<number, string>, value: number, prefix: string): string {
  const name = names[value];
  if (name === undefined) return String(value);
  return name.startsWith(prefix) ? name.slice(prefix.length) : name;
}

/** The first 8 characters of a UUID, for tables and the event tail. */
export function shortId(id: string): string {
  return id.length > 8 ? id.slice(0, 8) : id;
}


/**
 * The port answered in HTTP/2 frames to an HTTP/1.1 request: a gRPC port (BERTH_ADDR), not the
 * HTTP port the command speaks Connect to. Node's HTTP parser sees the server's h2 SETTINGS
 * frame where a status line belongs.
 */
function isGrpcPort(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === "object" && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (code === "HPE_INVALID_CONSTANT" || code === "HPE_INVALID_VERSION") return true;
  }
  return false;
}

/** What a failed command reports: for people on stderr, or one JSON object with --json. */
interface Failure {
  readonly exitCode: number;
  readonly code: string;
  readonly reason: string;
  readonly message: string;
  readonly details: Record<string, unknown>;
}

function describe(err: unknown, serverUrl: string): Failure {
  if (err instanceof UsageError) return { exitCode: EXIT.usage, code: "INVALID_ARGUMENT", reason: err.reason, message: err.message, details: err.details };
  if (isGrpcPort(err)) {
    return {
      exitCode: EXIT.unreachable,
      code: "UNAVAILABLE",
      reason: "GRPC_PORT",
      message: `${serverUrl} answers in HTTP/2 only: it looks like the gRPC port (BERTH_ADDR); the berth command speaks Connect to the HTTP port (BERTH_HTTP_ADDR, default ${DEFAULT_HTTP}): pass --server http://HOST:HTTP_PORT or set BERTH_SERVER`,
      details: { server: serverUrl },
    };
  }
  if (isUnreachable(err)) {
    const cause = networkCause(err) ?? "";
    return {
      exitCode: EXIT.unreachable,
      code: "UNAVAILABLE",
      reason: "UNREACHABLE",
      message: `cannot reach the berth server at ${serverUrl} (${cause}); start it with \`berth serve\`, or pass --server / set BERTH_SERVER`,
      details: { server: serverUrl, cause },
    };
  }
  if (err instanceof ConnectError) {
    const info = err.findDetails(ErrorInfoSchema)[0];
    const violations = err.findDetails(BadRequestSchema)[0]?.fieldViolations ?? [];
    const details: Record<string, unknown> = { ...(info?.metadata ?? {}) };
    if (violations.length > 0) details["fieldViolations"] = violations.map((v) => ({ field: v.field, description: v.description, reason: v.reason }));
    return { exitCode: EXIT.serverError, code: codeName(err.code), reason: info?.reason ?? "", message: err.rawMessage, details };
  }
  return { exitCode: EXIT.serverError, code: "UNKNOWN", reason: "", message: err instanceof Error ? err.message : String(err), details: {} };
}

/**
 * Reports a failure on stderr and returns the exit code:
 *   berth: FAILED_PRECONDITION INVALID_TRANSITION: changeset … cannot move from DRAFT to MERGED
 *     from: DRAFT
 * followed by the ErrorInfo metadata and any BadRequest field violations; with json, one line
 * {"code","reason","message","details"} instead.
 */
export function reportError(err: unknown, serverUrl: string, json = false): number {
  const f = describe(err, serverUrl);
  if (json) {
    process.stderr.write(`${JSON.stringify({ code: f.code, reason: f.reason, message: f.message, details: f.details })}\n`);
    return f.exitCode;
  }
  const red = (s: string) => paint("red", s, stderrColour);
  if (!(err instanceof ConnectError) || f.reason === "GRPC_PORT" || f.reason === "UNREACHABLE") {
    const under = err instanceof UsageError ? err.lines.map((l) => `  ${l}\n`).join("") : "";
    process.stderr.write(`${red("berth:")} ${f.message}\n${under}`);
    return f.exitCode;
  }
  const lines = [`${red("berth:")} ${f.reason ? `${f.code} ${f.reason}` : f.code}: ${f.message}`];
  // Only the metadata that says something (SYMBOL_LOCKED on a whole file has no symbol): --json keeps every key.
  for (const [k, v] of Object.entries(f.details).sort(([a], [b]) => a.localeCompare(b))) {
    if (k !== "fieldViolations" && String(v) !== "") lines.push(`  ${k}: ${String(v)}`);
  }
  for (const v of err.findDetails(BadRequestSchema)[0]?.fieldViolations ?? []) lines.push(`  field ${v.field}: ${v.description}`);
  process.stderr.write(`${lines.join("\n")}\n`);
  return f.exitCode;
}

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/**
 * Runs work with a spinner on stderr that appears only after delayMs (so quick calls show
 * nothing), and only when stderr is a terminal. The line is cleared when the work settles.
 */
export async function withSpinner<T>(label: string, work: () => Promise<T>, delayMs = 1000): Promise<T> {
  if (!process.stderr.isTTY) return work();
  let frame = 0;
  let ticker: NodeJS.Timeout | undefined;
  const started = Date.now();
  const delay = setTimeout(() => {
    ticker = setInterval(() => {
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      process.stderr.write(`\r${paint("cyan", FRAMES[frame++ % FRAMES.length]!, stderrColour)} ${label} ${paint("dim", `${seconds}s`, stderrColour)}\x1b[K`);
    }, 80);
  }, delayMs);
  try {
    return await work();
  } finally {
    clearTimeout(delay);
    if (ticker) {
      clearInterval(ticker);
      process.stderr.write("\r\x1b[K");
    }
  }
}
