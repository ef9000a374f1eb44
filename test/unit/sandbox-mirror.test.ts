/**
 * berth run's sandbox and a repository on a git server: the environment borrows the objects of
 * the instance's mirror, under the data directory the sandbox hides. That object store, and
 * nothing else of the data directory, is shown read-only (an alternates file the agent edits
 * cannot point it at the database or a token file).
 */
import { describe, expect, it } from "vitest";
import { bwrapArgs } from "../../src/platform/sandbox.js";

const DATA = "/var/lib/berth";
const MIRROR = `${DATA}/mirrors/3f2a9c1e-0b7d-4e59-9a61-5c0d8e2f4b17.git/objects`;
const plan = (readable: string[]) => ({ writable: "/envs/ws", hide: ["/envs", DATA], readable, files: [], network: false });
const shown = (args: string[]) => args.flatMap((a, i) => (a === "--ro-bind-try" ? [args[i + 1]!] : []));

describe("berth run's sandbox over a mirror", () => {
  it("shows a mirror's object store under the hidden data directory, read-only", () => {
    expect(shown(bwrapArgs(plan([MIRROR]), "/envs/ws"))).toEqual([MIRROR]);
  });

  it("shows nothing else of the data directory: not the database, not a mirror itself, not a path that only looks like one", () => {
    for (const p of [`${DATA}/pgdata`, `${DATA}/mirrors/3f2a9c1e-0b7d-4e59-9a61-5c0d8e2f4b17.git`, `${DATA}/mirrors`, `${DATA}/x/mirrors/3f2a9c1e-0b7d-4e59-9a61-5c0d8e2f4b17.git/objects`, `${DATA}/mirrors/../pgdata/objects`]) {
      expect(shown(bwrapArgs(plan([p]), "/envs/ws"))).toEqual([]);
    }
  });
});
