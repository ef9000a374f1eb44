/**
 * The liveness probe's answer does not depend on whether it read the marker or found it unchanged
 * since it last held the token (one lstat): every change in the marker's place falls back to the
 * read, which decides as it always did; a read that finds the token is remembered.
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MARKER, materialise, probe, type Environment } from "../../src/turns/environment.js";

let root: string;

beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), "berth-probe-"));
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

async function fresh(): Promise<Environment> {
  return materialise({ root, workspaceId: randomUUID(), sourcePath: null, baseCommit: "0".repeat(40), branch: "berth/x", entries: [] });
}

const marker = (env: Environment) => path.join(env.path, MARKER);

it("a fresh environment's marker is known from its write: unchanged, the probe answers alive", async () => {
  const env = await fresh();
  expect(env.markerSeen).toBeDefined();
  const seen = env.markerSeen;
  expect(await probe(env, 1000)).toBe(true);
  expect(env.markerSeen).toBe(seen); // not read again
});

it("a marker touched, renamed back or re-moded, still holding the token: alive, read again and remembered", async () => {
  const env = await fresh();
  const first = env.markerSeen!;
  utimesSync(marker(env), new Date(0), new Date(0));
  expect(await probe(env, 1000)).toBe(true);
  const touched = env.markerSeen!;
  expect(touched).not.toEqual(first);
  renameSync(marker(env), `${marker(env)}.x`);
  renameSync(`${marker(env)}.x`, marker(env));
  chmodSync(marker(env), 0o600);
  expect(await probe(env, 1000)).toBe(true);
  expect(env.markerSeen).not.toEqual(touched);
  expect(await probe(env, 1000)).toBe(true);
});

it("a directory copied back in place (another file, the same token): alive, as a read says", async () => {
  const env = await fresh();
  const aside = `${env.path}.aside`;
  renameSync(env.path, aside);
  cpSync(aside, env.path, { recursive: true, preserveTimestamps: true });
  expect(await probe(env, 1000)).toBe(true);
});

it("dead whatever is in the marker's place: gone, another token of the same length, a FIFO, a symlink to a file with the token", async () => {
  const gone = await fresh();
  rmSync(gone.path, { recursive: true, force: true });
  expect(await probe(gone, 1000)).toBe(false);

  const other = await fresh();
  writeFileSync(marker(other), randomUUID());
  expect(await probe(other, 1000)).toBe(false);

  const fifo = await fresh();
  rmSync(marker(fifo));
  execFileSync("mkfifo", [marker(fifo)]);
  expect(await probe(fifo, 1000)).toBe(false);

  const link = await fresh();
  const elsewhere = path.join(root, `token-${randomUUID()}`);
  writeFileSync(elsewhere, link.token);
  rmSync(marker(link));
  symlinkSync(elsewhere, marker(link));
  expect(await probe(link, 1000)).toBe(false);
});

it("an environment never seen (a leftover): decided by reading its marker, then remembered", async () => {
  const env = await fresh();
  const { markerSeen: _, ...unseen } = env;
  const leftover: Environment = unseen;
  expect(await probe(leftover, 1000)).toBe(true);
  expect(leftover.markerSeen).toEqual(env.markerSeen);
});
