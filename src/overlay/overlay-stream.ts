/**
 * An overlay's file contents read from PostgreSQL in batches, one batch ahead of the consumer
 * (issue 30): a landing or a diff of ten thousand files hands git each file as it comes and
 * never holds more than two batches (BATCH_BYTES each, or one file larger than that). The rows
 * to read were chosen beforehand from their metadata, with the hash each must hold; a row that
 * is gone or holds something else by the time its batch is read ends the stream with
 * OverlayRowMoved (the caller decides again on fresh metadata).
 */
import type { Kysely, Transaction } from "kysely";
import type { Database } from "../platform/schema.js";
import { readOverlayContents } from "./overlay.repository.js";

type Executor = Kysely<Database> | Transaction<Database>;

/** A batch holds up to this many bytes of content (or one larger file), */
export const BATCH_BYTES = 4 * 1024 * 1024;
/** and up to this many rows. */
export const BATCH_ROWS = 512;

/** A row to read: its keys, the hash it was decided on, its size (to cut the batches). */
export interface OverlayFileRef {
  readonly workspaceId: string;
  readonly path: string;
  readonly sha256: string;
  readonly size: number;
}

/** A row read for a stream no longer holds what the stream was decided on. */
export class OverlayRowMoved extends Error {
  constructor(readonly path: string) {
    super(`the overlay row of ${path} changed while it was read`);
  }
}

/** The batches `refs` is read in, in order. */
export function batchesOf<T extends { readonly size: number }>(refs: readonly T[]): T[][] {
  const out: T[][] = [];
  let cur: T[] = [];
  let bytes = 0;
  for (const r of refs) {
    if (cur.length > 0 && (bytes + r.size > BATCH_BYTES || cur.length >= BATCH_ROWS)) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(r);
    bytes += r.size;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/**
 * The content of each of `refs`, in their order, read a batch at a time with the next batch's
 * statement sent while the consumer takes the current one.
 */
export async function* overlayContents(db: Executor, refs: readonly OverlayFileRef[]): AsyncGenerator<{ ref: OverlayFileRef; content: Uint8Array }> {
  const batches = batchesOf(refs);
  const read = (i: number) => {
    const p = readBatch(db, batches[i]!);
    p.catch(() => {}); // awaited below, unless the consumer stopped first
    return p;
  };
  let next = batches.length > 0 ? read(0) : undefined;
  for (let i = 0; next; i++) {
    const rows = await next;
    next = i + 1 < batches.length ? read(i + 1) : undefined;
    for (const row of rows) yield row;
  }
}

async function readBatch(db: Executor, batch: readonly OverlayFileRef[]): Promise<{ ref: OverlayFileRef; content: Uint8Array }[]> {
  const rows = await readOverlayContents(db, batch);
  const byKey = new Map(rows.map((r) => [`${r.workspace_id}\u0000${r.path}`, r]));
  return batch.map((ref) => {
    const row = byKey.get(`${ref.workspaceId}\u0000${ref.path}`);
    if (!row || row.sha256 !== ref.sha256 || row.content === null) throw new OverlayRowMoved(ref.path);
    return { ref, content: row.content };
  });
}
