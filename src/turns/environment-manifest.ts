/**
 * The manifest of an environment (what each path held when it was last materialised or captured)
 * persisted beside the environments, so that a restart can capture what a crash left uncaptured;
 * and the git blob id its entries record: the id git gives the same content, so a file and its
 * base compare without asking git.
 */
import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { envPath, type Environment, type Manifest } from "./environment-model.js";
import { markerToken } from "./environment-marker.js";

export function gitBlobId(content: Uint8Array): string {
  return createHash("sha1").update(`blob ${content.byteLength}\0`).update(content).digest("hex");
}

/** The manifest, persisted beside the environments so a restart can capture what a crash left uncaptured. */
function manifestFile(root: string, workspaceId: string): string {
  return path.join(root, ".manifests", `${workspaceId}.json`);
}

export async function saveManifest(root: string, env: Environment): Promise<void> {
  const file = manifestFile(root, env.workspaceId);
  await mkdir(path.dirname(file), { recursive: true });
  const entries = [...env.manifest].map(([p, e]) => [p, e.size, e.mtimeMs, e.blob]);
  const tmp = `${file}.${env.token}.tmp`;
  await writeFile(tmp, JSON.stringify({ token: env.token, entries }));
  await rename(tmp, file);
}

/** The environment a previous process left at the workspace's path, when its marker and saved manifest agree. */
export async function loadLeftover(root: string, workspaceId: string): Promise<Environment | undefined> {
  const dir = envPath(root, workspaceId);
  const token = await markerToken(dir);
  if (token === undefined) return undefined;
  try {
    const saved = JSON.parse(await readFile(manifestFile(root, workspaceId), "utf8")) as { token: string; entries: [string, number, number, string][] };
    if (saved.token !== token) return undefined;
    const manifest: Manifest = new Map(saved.entries.map(([p, size, mtimeMs, blob]) => [p, { size, mtimeMs, blob }]));
    return { workspaceId, path: dir, token, manifest };
  } catch {
    return undefined;
  }
}
