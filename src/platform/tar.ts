/**
 * Extracts an uncompressed tar archive of directories and regular files (what PGlite's
 * dumpDataDir writes: ustar, no links) into a directory. Any other entry type is refused, and so
 * is a name that would leave the directory.
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";

const BLOCK = 512;

function field(header: Buffer, start: number, length: number): string {
  const raw = header.subarray(start, start + length);
  const end = raw.indexOf(0);
  return raw.subarray(0, end === -1 ? length : end).toString("utf8");
}

export async function extractTar(archive: Buffer, into: string): Promise<void> {
  const root = path.resolve(into);
  for (let at = 0; at + BLOCK <= archive.length; ) {
    const header = archive.subarray(at, at + BLOCK);
    if (header.every((b) => b === 0)) return; // end of archive
    const prefix = field(header, 345, 155);
    const name = (prefix ? `${prefix}/` : "") + field(header, 0, 100);
    const size = parseInt(field(header, 124, 12).trim() || "0", 8);
    const type = String.fromCharCode(header[156]!);
    const target = path.resolve(root, `.${path.posix.sep}${name}`);
    if (target !== root && !target.startsWith(root + path.sep)) throw new Error(`tar entry ${JSON.stringify(name)} is outside the directory`);
    at += BLOCK;
    if (type === "5") await mkdir(target, { recursive: true });
    else if (type === "0" || type === "\0") {
      await mkdir(path.dirname(target), { recursive: true });
      await writeFile(target, archive.subarray(at, at + size));
    } else throw new Error(`tar entry ${JSON.stringify(name)} has type ${JSON.stringify(type)}: only files and directories are expected`);
    at += Math.ceil(size / BLOCK) * BLOCK;
  }
}
