import { REQUIRE_SERVICES } from "../support/services.js";
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config.js";
import {
  compileGitignore,
  createWorkerWalker,
  isIgnored,
  listingEntries,
  readMapConfig,
  sanitizeName,
  skipReason,
  walkTree,
  WorkspaceMapService,
  type MapResult,
  type WalkResult,
  type Walker,
  type WorkerWalker,
} from "../../src/turns/map/index.js";
import { FILE, NOT_DESCENDED } from "../../src/turns/map/listing.mjs";

// ---------------------------------------------------------------------------------------
// helpers

interface LogLine {
  level: "warn" | "info";
  obj: Record<string, unknown>;
  msg: string;
}

function captureLogger() {
  const lines: LogLine[] = [];
  return {
    lines,
    warn: (obj: object, msg: string) => lines.push({ level: "warn", obj: obj as Record<string, unknown>, msg }),
    info: (obj: object, msg: string) => lines.push({ level: "info", obj: obj as Record<string, unknown>, msg }),
  };
}

function fakeClock(start = 1_000_000) {
  return { t: start, now() { return this.t; } };
}

/** A walk that never returns: what a wedged File Provider mount looks like from the walk. */
function stalledWalker() {
  const calls: string[] = [];
  const walker: Walker = (root) => {
    calls.push(root);
    return new Promise<WalkResult>(() => {});
  };
  return { walker, calls };
}

/** A walk whose every call is settled by the test. */
function controlledWalker() {
  const calls: { root: string; resolve: (r: WalkResult) => void }[] = [];
  const walker: Walker = (root) => new Promise<WalkResult>((resolve) => calls.push({ root, resolve }));
  return { walker, calls };
}

/** A walk's result listing top-level entries ("name/" for a directory). */
function mapOf(...names: string[]): WalkResult {
  const listing = {
    count: names.length,
    names: names.map((n) => n.replace(/\/$/, "")).join("/"),
    kinds: Int32Array.from(names, (n) => (n.endsWith("/") ? NOT_DESCENDED : FILE)),
    kids: Uint32Array.of(names.length),
  };
  return { kind: "ok", listing, total: names.length };
}

/** The entries of a real walk's result, as "path" or "path/" for a directory. */
function walked(result: WalkResult): string[] {
  if (result.kind !== "ok") throw new Error(`no listing: ${JSON.stringify(result)}`);
  return listingEntries(result.listing).map((e) => e.path + (e.isDir ? "/" : ""));
}

async function timed<T>(p: Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = performance.now();
  const value = await p;
  return { value, ms: performance.now() - t0 };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

let tmpRoot: string;
let walker: WorkerWalker;
beforeAll(() => {
  tmpRoot = mkdtempSync(path.join(tmpdir(), "berth-map-"));
  walker = createWorkerWalker();
});
afterAll(async () => {
  await walker.close();
  rmSync(tmpRoot, { recursive: true, force: true });
});

let seq = 0;
/** A fresh directory per test, so no test shares a root (and its cache) with another. */
function freshDir(files: Record<string, string | null>): string {
  const dir = path.join(tmpRoot, `t${++seq}`);
  mkdirSync(dir, { recursive: true });
  for (const [rel, content] of Object.entries(files)) {
    const abs = path.join(dir, rel);
    if (content === null) mkdirSync(abs, { recursive: true });
    else {
      mkdirSync(path.dirname(abs), { recursive: true });
      writeFileSync(abs, content);
    }
  }
  return dir;
}

function realService(extra: Partial<ConstructorParameters<typeof WorkspaceMapService>[0]> = {}) {
  const logger = captureLogger();
  const service = new WorkspaceMapService({ walker, logger, home: "/nonexistent-home-for-tests", env: {}, ...extra });
  return { service, logger };
}

function paths(result: MapResult): string[] {
  if (result.status !== "ok" && result.status !== "stale") throw new Error(`no map: ${JSON.stringify(result)}`);
  return result.map.entries.map((e) => e.path + (e.isDir ? "/" : ""));
}

// ---------------------------------------------------------------------------------------
// rule 2: a finite budget

describe("workspace map: the budget", () => {
  it("a stalled walk returns within the budget instead of holding the turn", async () => {
    const { walker: stalled, calls } = stalledWalker();
    const logger = captureLogger();
    const service = new WorkspaceMapService({ walker: stalled, logger, env: {}, config: { budgetMs: 200 }, home: "/home/nobody" });
    const { value, ms } = await timed(service.getMap("/work/stalled-a"));
    expect(value).toEqual({ status: "over_budget" });
    expect(ms).toBeGreaterThanOrEqual(150);
    expect(ms).toBeLessThan(2000);
    expect(calls).toHaveLength(1);
    const warns = logger.lines.filter((l) => l.level === "warn");
    expect(warns).toHaveLength(1);
    expect(warns[0]!.msg).toContain("/work/stalled-a");
    expect(warns[0]!.msg).toContain("BERTH_MAP_BUDGET_MS");
    expect(warns[0]!.msg).toContain("BERTH_MAP_MAX_DEPTH");
  });

  it("after a lapse the next turn pays nothing for the TTL, then waits again for the same walk", async () => {
    const { walker: stalled, calls } = stalledWalker();
    const clock = fakeClock();
    const service = new WorkspaceMapService({ walker: stalled, clock, env: {}, config: { budgetMs: 150, ttlMs: 30_000 }, home: "/home/nobody" });
    await service.getMap("/work/stalled-b");
    const second = await timed(service.getMap("/work/stalled-b"));
    expect(second.value).toEqual({ status: "over_budget" });
    expect(second.ms).toBeLessThan(100);
    clock.t += 30_001;
    const third = await timed(service.getMap("/work/stalled-b"));
    expect(third.value).toEqual({ status: "over_budget" });
    expect(third.ms).toBeGreaterThanOrEqual(100);
    expect(calls).toHaveLength(1);
  });

  it("the budget cannot be configured to zero, negative or infinite", () => {
    for (const budgetMs of [0, -1, Number.POSITIVE_INFINITY, Number.NaN]) {
      expect(() => new WorkspaceMapService({ walker: stalledWalker().walker, env: {}, config: { budgetMs } })).toThrow(ConfigError);
    }
    for (const value of ["0", "-100", "soon"]) {
      let error: unknown;
      try {
        new WorkspaceMapService({ walker: stalledWalker().walker, env: { BERTH_MAP_BUDGET_MS: value } });
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).variable).toBe("BERTH_MAP_BUDGET_MS");
    }
  });

  it("reads its settings from BERTH_MAP_* with the documented defaults", () => {
    expect(readMapConfig({})).toEqual({ budgetMs: 1500, ttlMs: 30_000, maxDepth: 3, maxEntries: 200 });
    expect(readMapConfig({ BERTH_MAP_BUDGET_MS: "250", BERTH_MAP_TTL_MS: "0", BERTH_MAP_MAX_DEPTH: "5", BERTH_MAP_MAX_ENTRIES: "50" })).toEqual({
      budgetMs: 250,
      ttlMs: 0,
      maxDepth: 5,
      maxEntries: 50,
    });
    expect(() => readMapConfig({ BERTH_MAP_TTL_MS: "-1" })).toThrow(ConfigError);
    expect(() => readMapConfig({ BERTH_MAP_MAX_DEPTH: "0" })).toThrow(ConfigError);
  });
});

// ---------------------------------------------------------------------------------------
// rule 3: cancellation

describe("workspace map: cancellation", () => {
  it("a cancelled turn returns at once and leaves the walk running", async () => {
    const { walker: stalled, calls } = stalledWalker();
    const service = new WorkspaceMapService({ walker: stalled, env: {}, config: { budgetMs: 20_000 }, home: "/home/nobody" });
    const controller = new AbortController();
    const pending = timed(service.getMap("/work/cancel-a", { signal: controller.signal }));
    await tick();
    controller.abort();
    const { value, ms } = await pending;
    expect(value).toEqual({ status: "cancelled" });
    expect(ms).toBeLessThan(1000);
    expect(calls).toHaveLength(1);
    expect(service.isWalking("/work/cancel-a")).toBe(true);
  });

  it("a turn cancelled before it asks starts no walk", async () => {
    const { walker: stalled, calls } = stalledWalker();
    const service = new WorkspaceMapService({ walker: stalled, env: {}, home: "/home/nobody" });
    const controller = new AbortController();
    controller.abort();
    expect(await service.getMap("/work/cancel-b", { signal: controller.signal })).toEqual({ status: "cancelled" });
    expect(calls).toHaveLength(0);
  });
});

// ---------------------------------------------------------------------------------------
// rule 4: single flight; rule 1 consequences (TTL-only cache keyed on the root as given)

describe("workspace map: single flight and the cache", () => {
  it("a second turn never starts a second walk of the same root", async () => {
    const { walker: stalled, calls } = stalledWalker();
    const clock = fakeClock();
    const service = new WorkspaceMapService({ walker: stalled, clock, env: {}, config: { budgetMs: 100, ttlMs: 1000 }, home: "/home/nobody" });
    const [a, b] = await Promise.all([service.getMap("/work/single"), service.getMap("/work/single")]);
    expect(a).toEqual({ status: "over_budget" });
    expect(b).toEqual({ status: "over_budget" });
    clock.t += 5000; // the negative expires; the wedged walk still holds its marker
    expect(await service.getMap("/work/single")).toEqual({ status: "over_budget" });
    expect(calls).toEqual(["/work/single"]);
  });

  it("a wedged walk of one root does not hold up the walk of another", async () => {
    const calls: string[] = [];
    const walker: Walker = (root) => {
      calls.push(root);
      return root === "/work/wedged" ? new Promise<WalkResult>(() => {}) : Promise.resolve(mapOf("a.txt"));
    };
    const service = new WorkspaceMapService({ walker, env: {}, config: { budgetMs: 100 }, home: "/home/nobody" });
    expect((await service.getMap("/work/wedged")).status).toBe("over_budget");
    expect(paths(await service.getMap("/work/healthy"))).toEqual(["a.txt"]);
  });

  it("the last good map is served while a walk is in flight", async () => {
    const { walker: controlled, calls } = controlledWalker();
    const clock = fakeClock();
    const service = new WorkspaceMapService({ walker: controlled, clock, env: {}, config: { budgetMs: 150, ttlMs: 1000 }, home: "/home/nobody" });

    const first = service.getMap("/work/lastgood");
    await tick();
    calls[0]!.resolve(mapOf("first.txt"));
    expect(await first).toMatchObject({ status: "ok" });
    expect(paths(await service.getMap("/work/lastgood"))).toEqual(["first.txt"]); // cached: no walk
    expect(calls).toHaveLength(1);

    clock.t += 1001; // expired: the next turn starts a refresh, which wedges
    const refreshing = service.getMap("/work/lastgood");
    await tick();
    expect(calls).toHaveLength(2);
    const concurrent = await timed(service.getMap("/work/lastgood"));
    expect(concurrent.value).toMatchObject({ status: "stale", why: "walk_in_flight" });
    expect(paths(concurrent.value)).toEqual(["first.txt"]);
    expect(concurrent.ms).toBeLessThan(100);
    const lapsed = await refreshing;
    expect(lapsed).toMatchObject({ status: "stale", why: "over_budget" });
    expect(paths(lapsed)).toEqual(["first.txt"]);
    expect(calls).toHaveLength(2);

    calls[1]!.resolve(mapOf("second.txt")); // the walk finishes late; its result is kept
    await tick();
    expect(paths(await service.getMap("/work/lastgood"))).toEqual(["second.txt"]);
    expect(calls).toHaveLength(2);
  });

  it("a TTL of 0 caches nothing: neither the map nor the over-budget stamp", async () => {
    let walks = 0;
    const quick: Walker = async () => {
      walks++;
      return mapOf(`walk${walks}.txt`);
    };
    const service = new WorkspaceMapService({ walker: quick, env: { BERTH_MAP_TTL_MS: "0" }, home: "/home/nobody" });
    expect(paths(await service.getMap("/work/ttl0"))).toEqual(["walk1.txt"]);
    expect(paths(await service.getMap("/work/ttl0"))).toEqual(["walk2.txt"]);
    expect(walks).toBe(2);

    const { walker: stalled, calls } = stalledWalker();
    const wedged = new WorkspaceMapService({ walker: stalled, env: {}, config: { budgetMs: 120, ttlMs: 0 }, home: "/home/nobody" });
    await wedged.getMap("/work/ttl0-wedged");
    const again = await timed(wedged.getMap("/work/ttl0-wedged"));
    expect(again.value).toEqual({ status: "over_budget" });
    expect(again.ms).toBeGreaterThanOrEqual(90); // no cached negative: it waited again
    expect(calls).toHaveLength(1); // ...for the same walk
  });

  it("keys the cache on the root as given, without canonicalising it", async () => {
    const seen: string[] = [];
    const quick: Walker = async (root) => {
      seen.push(root);
      return mapOf("x");
    };
    const service = new WorkspaceMapService({ walker: quick, env: {}, home: "/home/nobody" });
    await service.getMap("/work/as-given");
    await service.getMap("/work/as-given/");
    await service.getMap("/work/as-given");
    expect(seen).toEqual(["/work/as-given", "/work/as-given/"]);
  });
});

// ---------------------------------------------------------------------------------------
// skip rules

describe("workspace map: roots that get no map", () => {
  it("the home directory gets no map and no walk", async () => {
    const { walker: stalled, calls } = stalledWalker();
    const service = new WorkspaceMapService({ walker: stalled, env: {}, home: "/Users/wgu" });
    expect(await service.getMap("/Users/wgu")).toEqual({ status: "skipped", reason: "home_directory" });
    expect(await service.getMap("/Users/wgu/")).toEqual({ status: "skipped", reason: "home_directory" });
    expect(calls).toHaveLength(0);
  });

  it("a filesystem root gets no map, on POSIX and Windows-shaped paths", async () => {
    const { walker: stalled, calls } = stalledWalker();
    const service = new WorkspaceMapService({ walker: stalled, env: {}, home: "/Users/wgu" });
    expect(await service.getMap("/")).toEqual({ status: "skipped", reason: "filesystem_root" });
    expect(calls).toHaveLength(0);
    for (const root of ["/", "//", "/..", "C:\\", "c:/", "D:", "\\\\server\\share\\"]) expect(skipReason(root, "/Users/wgu")).toBe("filesystem_root");
  });

  it("a root inside an opaque tree or <home>/Library gets no map, but AppData and a project named Library do", () => {
    const home = "/Users/wgu";
    expect(skipReason("/Users/wgu/Library", home)).toBe("opaque_tree");
    expect(skipReason("/Users/wgu/Library/CloudStorage/Dropbox/proj", home)).toBe("opaque_tree");
    expect(skipReason("/Volumes/x/Group Containers/g", home)).toBe("opaque_tree");
    expect(skipReason("/Users/wgu/src/Library", home)).toBeUndefined();
    expect(skipReason("/Users/wgu/src/proj", home)).toBeUndefined();
    // Windows: the temp directory lives under AppData, so AppData must not be opaque.
    expect(skipReason("C:\\Users\\me\\AppData\\Local\\Temp\\.tmpABC123", "C:\\Users\\me")).toBeUndefined();
    expect(skipReason("C:\\Users\\me", "c:/users/me/")).toBe("home_directory");
    expect(skipReason(tmpdir(), home)).toBeUndefined();
  });

  it("logs the skip line once per root across several turns", async () => {
    const logger = captureLogger();
    const service = new WorkspaceMapService({ walker: stalledWalker().walker, logger, env: {}, home: "/Users/wgu" });
    for (let i = 0; i < 5; i++) {
      await service.getMap("/Users/wgu");
      await service.getMap("/");
    }
    const infos = logger.lines.filter((l) => l.level === "info");
    expect(infos).toHaveLength(2);
    expect(infos[0]!.msg).toContain("home directory");
    expect(infos[0]!.obj).toMatchObject({ working_dir: "/Users/wgu" });
    expect(infos[1]!.obj).toMatchObject({ working_dir: "/", reason: "filesystem_root" });
  });

  it("a symlink to the home directory is refused by the walk itself", async () => {
    const dir = freshDir({ "home/file.txt": "" });
    const { symlinkSync } = await import("node:fs");
    symlinkSync(path.join(dir, "home"), path.join(dir, "link"));
    const { service } = realService({ home: path.join(dir, "home") });
    expect(await service.getMap(path.join(dir, "link"))).toEqual({ status: "skipped", reason: "home_directory" });
  });
});

describe("workspace map: pruning mid-walk (real directories)", () => {
  it("a project directory named Library stays walkable", async () => {
    const dir = freshDir({ "Library/src/main.ts": "", "Library/README.md": "" });
    const { service } = realService({ home: path.join(tmpRoot, "some-home") });
    const lib = await service.getMap(path.join(dir, "Library"));
    expect(paths(lib)).toEqual(["README.md", "src/", "src/main.ts"]);
    expect(paths(await service.getMap(dir))).toEqual(["Library/", "Library/README.md", "Library/src/", "Library/src/main.ts"]);
  });

  it("<home>/Library is pruned: listed by name, never read", async () => {
    const dir = freshDir({ "home/Library/Group Containers/g/secret.txt": "", "home/Library/prefs.plist": "", "home/proj/a.ts": "", "home/Library2/b.txt": "" });
    const { service } = realService({ home: path.join(dir, "home"), config: { maxDepth: 5 } });
    expect(paths(await service.getMap(dir))).toEqual(["home/", "home/Library/", "home/Library2/", "home/Library2/b.txt", "home/proj/", "home/proj/a.ts"]);
  });

  it("Group Containers and the other opaque trees are pruned anywhere mid-walk", async () => {
    const dir = freshDir({
      "Group Containers/group.com.example/blocked.txt": "",
      "deep/CloudStorage/Dropbox/blocked.txt": "",
      "deep/Mobile Documents/blocked.txt": "",
      "deep/FileProvider/blocked.txt": "",
      ".Trash/blocked.txt": "",
      "AppData/Local/Temp/ok.txt": "",
      "keep.txt": "",
    });
    const { service } = realService({ config: { maxDepth: 10 } });
    const listed = paths(await service.getMap(dir));
    expect(listed.filter((p) => p.includes("blocked"))).toEqual([]);
    expect(listed).toEqual([
      ".Trash/",
      "AppData/",
      "AppData/Local/",
      "AppData/Local/Temp/",
      "AppData/Local/Temp/ok.txt",
      "Group Containers/",
      "deep/",
      "deep/CloudStorage/",
      "deep/FileProvider/",
      "deep/Mobile Documents/",
      "keep.txt",
    ]);
  });

  const devStat = (() => {
    try {
      return { dev: statSync("/dev").dev, shm: statSync("/dev/shm").dev };
    } catch {
      return undefined;
    }
  })();
  // A mount cannot be made by an unprivileged test; /dev/shm is one on Linux machines. CI must not skip.
  it.skipIf(!REQUIRE_SERVICES && (!devStat || devStat.dev === devStat.shm))("never crosses a mount point (/dev/shm under /dev, where it is one)", async () => {
    const result = await walker("/dev", { maxDepth: 2, maxEntries: 10_000, home: "/nonexistent-home-for-tests" });
    expect(result.kind).toBe("ok");
    expect(walked(result)).toContain("shm/");
    expect(walked(result).filter((p) => p.startsWith("shm/") && p !== "shm/")).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------
// the map itself

describe("workspace map: contents", () => {
  it("honours .gitignore files at every level on a real tree, and always skips .git", async () => {
    const dir = freshDir({
      ".gitignore": "# comment\n*.log\n/build\ndist/\n!keep.log\nnode_modules/\ndocs/**/*.tmp\n\\#hash\n",
      ".git/HEAD": "ref",
      "a.log": "",
      "keep.log": "",
      "build/out.js": "",
      "src/build/inner.ts": "",
      "src/dist": "",
      "src/dist2/x": "",
      "node_modules/pkg/index.js": "",
      "docs/a/b/c.tmp": "",
      "docs/a/b/c.md": "",
      "docs/x.tmp": "",
      "#hash": "",
      "sub/.gitignore": "*.txt\n!important.txt\n/local\n",
      "sub/notes.txt": "",
      "sub/important.txt": "",
      "sub/local/x": "",
      "sub/deeper/local/y": "",
      "sub/q?.md": "",
      "main.ts": "",
    });
    const { service } = realService({ config: { maxDepth: 10 } });
    expect(paths(await service.getMap(dir))).toEqual([
      ".gitignore",
      "docs/",
      "docs/a/",
      "docs/a/b/",
      "docs/a/b/c.md",
      "keep.log",
      "main.ts",
      "src/",
      "src/build/",
      "src/build/inner.ts",
      "src/dist",
      "src/dist2/",
      "src/dist2/x",
      "sub/",
      "sub/.gitignore",
      "sub/deeper/",
      "sub/deeper/local/",
      "sub/deeper/local/y",
      "sub/important.txt",
      "sub/q?.md",
    ]);
  });

  it("matches gitignore patterns: *, **, ?, classes, anchoring, dir-only and negation", () => {
    const rules = [{ base: "", rules: compileGitignore("a?c\n**/logs\nfoo/**/bar\n[ab]x.md\nlib/**\n/only-root\ncache/\n!cache/keep\n") }];
    const ignored = (p: string, isDir = false) => isIgnored(rules, p, isDir);
    expect(ignored("abc")).toBe(true);
    expect(ignored("d/abc")).toBe(true);
    expect(ignored("abbc")).toBe(false);
    expect(ignored("x/y/logs", true)).toBe(true);
    expect(ignored("foo/bar")).toBe(true);
    expect(ignored("foo/a/b/bar")).toBe(true);
    expect(ignored("ax.md")).toBe(true);
    expect(ignored("cx.md")).toBe(false);
    expect(ignored("lib/x/y")).toBe(true);
    expect(ignored("lib", true)).toBe(false);
    expect(ignored("only-root")).toBe(true);
    expect(ignored("sub/only-root")).toBe(false);
    expect(ignored("cache", true)).toBe(true);
    expect(ignored("cache", false)).toBe(false);
  });

  it("limits depth and entries, and says showing N of M", async () => {
    const files: Record<string, string | null> = {};
    for (let i = 0; i < 30; i++) files[`top${String(i).padStart(2, "0")}.txt`] = "";
    files["a/b/c/d/too-deep.txt"] = "";
    const dir = freshDir(files);
    const { service } = realService({ config: { maxDepth: 3, maxEntries: 10 } });
    const result = await service.getMap(dir);
    expect(result.status).toBe("ok");
    if (result.status !== "ok") return;
    // Depth 3: a, a/b, a/b/c are entries (c is not read); 30 files: 33 in all.
    expect(result.map.total).toBe(33);
    expect(result.map.shown).toBe(10);
    expect(result.map.truncated).toBe(true);
    expect(paths(result)[0]).toBe("a/"); // breadth first: the top level is kept before depth
    expect(result.map.entries.every((e) => !e.path.startsWith("a/"))).toBe(true);
    expect(result.map.text.split("\n")[0]).toBe("Workspace file map (names only, may be slightly stale; depth 3; showing 10 of 33 entries):");
    expect(result.map.text).toContain("showing 10 of 33 entries");

    const { service: all } = realService({ config: { maxDepth: 3, maxEntries: 1000 } });
    const full = await all.getMap(dir);
    expect(paths(full)).toContain("a/b/c/");
    expect(paths(full).some((p) => p.includes("too-deep"))).toBe(false);
    if (full.status === "ok") expect(full.map.text).toContain("a/\n  b/\n    c/\ntop00.txt");
  });

  it("sanitises names with newlines and control characters, and truncates long names", async () => {
    const dir = freshDir({ "evil\nname.txt": "", "tab\there": "", "bell\u0007": "", ["x".repeat(200)]: "" });
    const { service } = realService();
    const result = await service.getMap(dir);
    const listed = paths(result);
    expect(listed).toContain("evil\\nname.txt");
    expect(listed).toContain("tab\\there");
    expect(listed).toContain("bell\\x07");
    expect(listed.some((p) => p.length === 100 && p.endsWith("…"))).toBe(true);
    if (result.status === "ok") expect(result.map.text.split("\n")).toHaveLength(1 + 4);
    expect(sanitizeName("a\u202Eb\u2028c\r")).toBe("a\\u202eb\\u2028c\\r");
  });

  it("a long or unsafe directory name alone is sanitised, and the paths under it use the sanitised name", async () => {
    const long = "d".repeat(150);
    const dir = freshDir({ [`${long}/inner.txt`]: "", "sub/x\u0085y/z.txt": "" });
    const { service } = realService();
    const shortened = "d".repeat(99) + "…";
    expect(paths(await service.getMap(dir))).toEqual([`${shortened}/`, `${shortened}/inner.txt`, "sub/", "sub/x\\x85y/", "sub/x\\x85y/z.txt"]);
  });

  it("siblings are in JavaScript string order even where the filesystem lists them otherwise", async () => {
    // libuv lists a directory in UTF-8 byte order: U+FF01 (EF BC 81) before U+1F600 (F0 9F 98 80).
    // In UTF-16 code units U+1F600 (D83D DE00) comes first, as from-paths.ts sorts.
    const dir = freshDir({ "\uFF01": "", "\u{1F600}": "", a: "" });
    const { service } = realService();
    expect(paths(await service.getMap(dir))).toEqual(["a", "\u{1F600}", "\uFF01"]);
  });

  it("escapes exactly the C0 and C1 controls, DEL, U+2028/U+2029 and the bidi overrides and isolates", () => {
    const unsafe = (cp: number) =>
      cp <= 0x1f || (cp >= 0x7f && cp <= 0x9f) || cp === 0x2028 || cp === 0x2029 || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
    const wrong: string[] = [];
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      const name = `a${String.fromCodePoint(cp)}b`;
      if ((sanitizeName(name) !== name) !== unsafe(cp)) wrong.push(cp.toString(16));
    }
    expect(wrong).toEqual([]);
    // Code points, not code units: an astral character is never split, a lone surrogate is kept.
    expect(sanitizeName("\u{1F600}\u0085\ud800")).toBe("\u{1F600}\\x85\ud800");
  });

  it("the real worker walker walks a real 1,000-file tree correctly", async () => {
    const files: Record<string, string | null> = {};
    const expected: string[] = [];
    for (let d = 0; d < 10; d++) {
      expected.push(`dir${d}/`);
      for (let f = 0; f < 100; f++) {
        const name = `dir${d}/file${String(f).padStart(3, "0")}.txt`;
        files[name] = "";
        expected.push(name);
      }
    }
    const dir = freshDir(files);
    const before = walker.stats().spawned;
    const result = await walker(dir, { maxDepth: Number.POSITIVE_INFINITY, maxEntries: Number.POSITIVE_INFINITY });
    expect(result.kind).toBe("ok");
    if (result.kind !== "ok") return;
    expect(result.total).toBe(1010);
    expect(walked(result)).toEqual(expected);
    // The worker answered and was kept for the next walk.
    await walker(dir, { maxDepth: 1 });
    expect(walker.stats().spawned).toBeLessThanOrEqual(before + 1);
    expect(walker.stats().busy).toBe(0);
  });

  it("a missing root fails the walk without throwing, and the turn proceeds", async () => {
    const { service, logger } = realService();
    const result = await service.getMap(path.join(tmpRoot, "does-not-exist"));
    expect(result).toMatchObject({ status: "failed", code: "ENOENT" });
    expect(logger.lines.filter((l) => l.level === "warn")).toHaveLength(1);
  });
});

// ---------------------------------------------------------------------------------------
// gitignore semantics: the `ignore` package, one instance per .gitignore (expected lists
// checked against `git status --ignored` on the same trees)

describe("workspace map: gitignore semantics", () => {
  async function listed(files: Record<string, string | null>): Promise<string[]> {
    const { service } = realService({ config: { maxDepth: 10 } });
    return paths(await service.getMap(freshDir(files)));
  }

  it("a `**/` pattern matches at any depth, the top included, and `a/**/b` spans zero or more directories", async () => {
    expect(
      await listed({
        ".gitignore": "**/tmp/\nsrc/**/gen\n",
        "tmp/x": "",
        "lib/tmp/y": "",
        "src/gen": "",
        "src/a/b/gen/z": "",
        "src/a/keep": "",
        "lib/gen": "",
      }),
    ).toEqual([".gitignore", "lib/", "lib/gen", "src/", "src/a/", "src/a/b/", "src/a/keep"]);
  });

  it("character classes follow git: ranges, negation, POSIX classes, and never a slash", async () => {
    expect(
      await listed({
        ".gitignore": "[[:digit:]]*.txt\nlog[a-c].md\nnote[!0-9]\nx[/]y\n",
        "1st.txt": "",
        "first.txt": "",
        "loga.md": "",
        "logd.md": "",
        "noteA": "",
        "note7": "",
        "x/y": "",
      }),
    ).toEqual([".gitignore", "first.txt", "logd.md", "note7", "x/", "x/y"]);
  });

  it("an out-of-order range such as [z-a] is read as git reads it instead of discarding the rest of its .gitignore", async () => {
    // git (wildmatch) lets [z-a] match "z" alone; the old subset threw building the regex and dropped the file.
    expect(await listed({ ".gitignore": "[z-a]\n*.log\n", "a.log": "", "a": "", "b": "", "z": "" })).toEqual([".gitignore", "a", "b"]);
  });

  it("escapes and trailing whitespace follow git: `\\#`, `\\!`, an escaped trailing space, and a tab that is not trimmed", async () => {
    expect(
      await listed({
        ".gitignore": "\\#notes\n\\!bang\nspace\\ \ntab\t\n",
        "#notes": "",
        "!bang": "",
        "space ": "",
        "space": "",
        "tab\t": "",
        "tab": "",
      }),
    ).toEqual([".gitignore", "space", "tab"]);
  });

  it("a byte-order mark at the start of a .gitignore does not hide its first rule", async () => {
    expect(await listed({ ".gitignore": "\uFEFF*.log\n", "a.log": "", "b.txt": "" })).toEqual([".gitignore", "b.txt"]);
  });

  it("patterns are case-sensitive, as git is on a case-sensitive filesystem", async () => {
    expect(await listed({ ".gitignore": "*.LOG\nBuild/\n", "a.log": "", "b.LOG": "", "build/x": "" })).toEqual([".gitignore", "a.log", "build/", "build/x"]);
  });

  it("a negation re-includes a file when the pattern ignored the directory's contents rather than the directory", async () => {
    expect(
      await listed({
        ".gitignore": "logs/*\n!logs/keep.txt\n",
        "logs/a.txt": "",
        "logs/keep.txt": "",
        "logs/old/keep.txt": "",
      }),
    ).toEqual([".gitignore", "logs/", "logs/keep.txt"]);
  });

  it("a directory excluded with `dir/` is not descended into, so nothing inside it can re-include a file", async () => {
    const dir = freshDir({
      ".gitignore": "cache/\n!cache/keep.txt\n",
      "cache/keep.txt": "",
      "cache/.gitignore": "!*\n",
      "cache/sub/deep.txt": "",
      "src/cache": "",
    });
    const result = await walker(dir, { maxDepth: 10, maxEntries: 1000, home: "/nonexistent-home-for-tests" });
    expect(result.kind).toBe("ok");
    if (result.kind !== "ok") return;
    expect(walked(result)).toEqual([".gitignore", "src/", "src/cache"]);
    expect(result.total).toBe(3);
  });

  it("a nested .gitignore re-includes with `!` what its parent excluded, and the parent's other rules still apply inside", async () => {
    expect(
      await listed({
        ".gitignore": "build/\n*.log\n",
        "build/c.txt": "",
        "sub/.gitignore": "!build/\n!important.log\n",
        "sub/build/a.txt": "",
        "sub/build/x.log": "",
        "sub/build/deep/b.txt": "",
        "sub/build/build/c.txt": "",
        "sub/important.log": "",
        "sub/other.log": "",
        "other/build/d.txt": "",
      }),
    ).toEqual([
      ".gitignore",
      "other/",
      "sub/",
      "sub/.gitignore",
      "sub/build/",
      "sub/build/a.txt",
      "sub/build/build/",
      "sub/build/build/c.txt",
      "sub/build/deep/",
      "sub/build/deep/b.txt",
      "sub/important.log",
    ]);
  });

  it("a re-included directory whose name holds glob characters keeps its parent's other rules inside it", async () => {
    expect(
      await listed({
        ".gitignore": "gen*/\n*.tmp\n",
        "pkg/.gitignore": "!gen*/\n",
        "pkg/gen[1] *?/a.txt": "",
        "pkg/gen[1] *?/b.tmp": "",
        "pkg/gen[1] *?/gen2/c.txt": "",
        "gen/d.txt": "",
      }),
    ).toEqual([".gitignore", "pkg/", "pkg/.gitignore", "pkg/gen[1] *?/", "pkg/gen[1] *?/a.txt", "pkg/gen[1] *?/gen2/", "pkg/gen[1] *?/gen2/c.txt"]);
  });

  it("a deeper .gitignore's patterns are relative to its own directory", async () => {
    expect(
      await listed({
        "a/.gitignore": "/top.txt\nb/c.txt\n",
        "a/top.txt": "",
        "a/x/top.txt": "",
        "a/b/c.txt": "",
        "a/x/b/c.txt": "",
        "top.txt": "",
      }),
    ).toEqual(["a/", "a/.gitignore", "a/b/", "a/x/", "a/x/b/", "a/x/b/c.txt", "a/x/top.txt", "top.txt"]);
  });

  it("an unreadable .gitignore is counted in the walk's outcome and does not fail the walk", async () => {
    const { symlinkSync } = await import("node:fs");
    const dir = freshDir({ "a.log": "", "sub/b.log": "" });
    symlinkSync(path.join(dir, "missing-target"), path.join(dir, "sub", ".gitignore"));
    const outcome = walkTree(dir, { maxDepth: 10, maxEntries: 1000, home: "/nonexistent-home-for-tests" });
    expect(outcome.kind).toBe("ok");
    if (outcome.kind !== "ok") return;
    expect(listingEntries(outcome.listing).map((e) => e.path)).toEqual(["a.log", "sub", "sub/.gitignore", "sub/b.log"]);
    expect(outcome.unreadableGitignores).toBe(1);
    expect(outcome.unreadable).toBe(0);
  });

  it("a .gitignore over 1 MiB is not read (its rules not applied) and is counted in the walk's outcome", async () => {
    const { truncateSync } = await import("node:fs");
    const dir = freshDir({ "big/.gitignore": "*.log\n", "big/a.log": "" });
    truncateSync(path.join(dir, "big", ".gitignore"), 300 * 1024 * 1024);
    const outcome = walkTree(dir, { maxDepth: 10, maxEntries: 1000, home: "/nonexistent-home-for-tests" });
    expect(outcome.kind).toBe("ok");
    if (outcome.kind !== "ok") return;
    expect(listingEntries(outcome.listing).map((e) => e.path)).toEqual(["big", "big/.gitignore", "big/a.log"]);
    expect(outcome.unreadableGitignores).toBe(1);
  });

  it("a .gitignore that is a FIFO is never opened for reading (the walk's thread would block for good) and is counted in the walk's outcome", async () => {
    const { execFileSync } = await import("node:child_process");
    const dir = freshDir({ "sub/b.log": "" });
    execFileSync("mkfifo", [path.join(dir, "sub", ".gitignore")]);
    const outcome = walkTree(dir, { maxDepth: 10, maxEntries: 1000, home: "/nonexistent-home-for-tests" });
    expect(outcome.kind).toBe("ok");
    if (outcome.kind !== "ok") return;
    expect(outcome.unreadableGitignores).toBe(1);
  });
});
