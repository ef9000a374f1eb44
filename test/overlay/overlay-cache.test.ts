/**
 * The overlay cache is bounded on an instance that serves other instances' sessions (a per-call
 * load balancer): overlays of workspaces not live here are evicted, least recently used first;
 * those of live workspaces are not.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OverlayCache } from "../../src/overlay/overlay-cache.js";
import { isLiveHere } from "../../src/sessions/registry.js";
import type { Workspace } from "../../src/sessions/workspace.js";
import { createTestDatabase, PRIMARY_KIND, type TestDatabase } from "../support/database.js";
import { harness, type Harness } from "../lifecycle/helpers.js";

describe(`overlay cache bounds (${PRIMARY_KIND})`, () => {
  let database: TestDatabase;
  let owner: Harness;
  let here: Harness;
  beforeAll(async () => {
    database = await createTestDatabase(PRIMARY_KIND);
    owner = await harness(database.opened.db, { instanceName: "owner:1" });
    here = await harness(database.opened.db, { instanceName: "here:1", repoId: owner.repoId, clock: owner.clock });
  });
  afterAll(async () => {
    await here?.lifecycle.stop();
    await owner?.lifecycle.stop();
    await database?.drop();
  });

  it("keeps at most N overlays of workspaces not live here, least recently used out; live ones stay", async () => {
    const theirs: Workspace[] = [];
    for (let i = 0; i < 4; i++) theirs.push(await here.registry.getWorkspace((await owner.create()).sessionId));
    const mine = [await here.create(), await here.create()];
    for (const w of theirs) expect(isLiveHere(w)).toBe(false);
    for (const w of mine) expect(isLiveHere(w)).toBe(true);

    const cache = new OverlayCache(database.opened.db, { maxNonLive: 2 });
    const ov = new Map<string, unknown>();
    for (const w of [...mine, ...theirs.slice(0, 2)]) ov.set(w.workspaceId, await cache.overlay(w));
    expect([cache.size, cache.nonLiveSize]).toEqual([4, 2]);
    // theirs[0] used again: theirs[1] is now the least recently used, and goes for theirs[2].
    expect(await cache.overlay(theirs[0]!)).toBe(ov.get(theirs[0]!.workspaceId));
    await cache.overlay(theirs[2]!);
    expect([cache.size, cache.nonLiveSize]).toEqual([4, 2]);
    expect(await cache.overlay(theirs[0]!)).toBe(ov.get(theirs[0]!.workspaceId));
    expect(await cache.overlay(theirs[1]!)).not.toBe(ov.get(theirs[1]!.workspaceId)); // rebuilt from the rows
    await cache.overlay(theirs[3]!);
    expect([cache.size, cache.nonLiveSize]).toEqual([4, 2]);
    // The live workspaces' overlays were never evicted.
    for (const w of mine) expect(await cache.overlay(w)).toBe(ov.get(w.workspaceId));
    // A live workspace that ends is no longer live here.
    await here.lifecycle.strand(mine[0]!.sessionId, "explicit");
    expect(isLiveHere(mine[0]!)).toBe(false);
  });
});
