/**
 * Output for the berth command: aligned tables and key/value blocks for people, proto3 JSON for
 * scripts, colour (only on a TTY without NO_COLOR), a delayed spinner on stderr, and the exit
 * codes and error lines every subcommand shares.
 */
import { codeName } from "../transport/status.js";
import { toJson, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { ConnectError } from "@connectrpc/connect";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";

/** Exit codes: 1 the server refused or failed, 2 a usage error, 3 the server is unreachable. */
export const EXIT = { serverError: 1, usage: 2, unreachable: 3 } as const;

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
}

function colourEnabled(stream: NodeJS.WriteStream): boolean {
  const noColor = process.env.NO_COLOR;
  return stream.isTTY === true && (noColor === undefined || noColor === "");
}

export const stdoutColour = colourEnabled(process.stdout);
export const stderrColour = colourEnabled(process.stderr);

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


const NETWORK_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ECONNRESET", "EPIPE", "UND_ERR_SOCKET"]);

/** The Node.js error code (ECONNREFUSED, …) somewhere in an error's cause chain. */
function networkCause(err: unknown): string | undefined {
  for (let e = err, depth = 0; e && typeof e === "object" && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && NETWORK_CODES.has(code)) return code;
  }
  return undefined;
}

/** The server could not be reached at all (as opposed to answering with an error). */
export function isUnreachable(err: unknown): boolean {
  if (!(err instanceof ConnectError)) return networkCause(err) !== undefined;
  if (err.findDetails(ErrorInfoSchema).length > 0) return false;
  return networkCause(err) !== undefined;
}

/**
 * Reports a failure on stderr and returns the exit code:
 *   berth: FAILED_PRECONDITION INVALID_TRANSITION: changeset … cannot move from DRAFT to MERGED
 *     from: DRAFT
 * followed by the ErrorInfo metadata and any BadRequest field violations.
 */
export function reportError(err: unknown, serverUrl: string): number {
  const red = (s: string) => paint("red", s, stderrColour);
  if (err instanceof UsageError) {
    process.stderr.write(`${red("berth:")} ${err.message}\n`);
    return EXIT.usage;
  }
  if (isUnreachable(err)) {
    process.stderr.write(`${red("berth:")} cannot reach the berth server at ${serverUrl} (${networkCause(err)}); start it with \`berth serve\`, or pass --server / set BERTH_SERVER\n`);
    return EXIT.unreachable;
  }
  if (err instanceof ConnectError) {
    const info = err.findDetails(ErrorInfoSchema)[0];
    const head = info?.reason ? `${codeName(err.code)} ${info.reason}` : codeName(err.code);
    const lines = [`${red("berth:")} ${head}: ${err.rawMessage}`];
    for (const [k, v] of Object.entries(info?.metadata ?? {}).sort(([a], [b]) => a.localeCompare(b))) lines.push(`  ${k}: ${v}`);
    for (const v of err.findDetails(BadRequestSchema)[0]?.fieldViolations ?? []) lines.push(`  field ${v.field}: ${v.description}`);
    process.stderr.write(`${lines.join("\n")}\n`);
    return EXIT.serverError;
  }
  process.stderr.write(`${red("berth:")} ${err instanceof Error ? err.message : String(err)}\n`);
  return EXIT.serverError;
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
