/**
 * Issue 26 item 9, through a real server: a base commit with a submodule (a gitlink, mode
 * 160000) checks out as an empty directory. What an agent writes in it cannot become overlay
 * files (the path is the submodule's commit in the base tree), so capture reports it, and a
 * teardown keeps the directory under .unsaved/ with a turn.capture_failed event instead of
 * deleting it.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TurnOutcome } from "../../gen/berth/v1/types_pb.js";
import { newSession, startTurnBerth, type TurnBerth } from "./helpers.js";

/** A repository whose base commit holds a file and a gitlink `sub` (no .gitmodules needed: the tree entry is the submodule). */
function repoWithGitlink(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-gitlink-"));
  const git = (...args: string[]) => execFileSync("git", ["-C", dir, "-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { encoding: "utf8" }).trim();
  git("init", "-q", "-b", "main");
  writeFileSync(path.join(dir, "README.md"), "# with a submodule\n");
  git("add", "-A");
  git("commit", "-q", "-m", "first");
  git("update-index", "--add", "--cacheinfo", `160000,${git("rev-parse", "HEAD")},sub`);
  git("commit", "-q", "-m", "a submodule");
  return dir;
}

describe("issue 26: edits inside an unpopulated submodule directory", () => {
  let b: TurnBerth;
  let source: string;
  beforeAll(async () => {
    source = repoWithGitlink();
    b = await startTurnBerth({ instances: 1 });
  });
  afterAll(async () => {
    await b?.close();
    rmSync(source, { recursive: true, force: true });
  });

  it("are reported in EndTurn's left_out (submodule) and, at the environment's teardown, kept under .unsaved/ with a turn.capture_failed event", async () => {
    const { sessionId, workspaceId } = await newSession(b, source);
    const t = await b.turns.beginTurn({ sessionId });
    const env = t.environmentPath;
    expect(readdirSync(path.join(env, "sub"))).toEqual([]); // the checkout's unpopulated submodule
    writeFileSync(path.join(env, "sub", "x.txt"), "written inside the submodule\n");
    writeFileSync(path.join(env, "top.txt"), "beside it\n");
    const ended = await b.turns.endTurn({ turnId: t.turnId, outcome: TurnOutcome.COMPLETED });
    expect(ended.capturedPaths).toEqual(["top.txt"]);
    expect(ended.leftOut.map((l) => [l.path, l.reason])).toEqual([["sub/", "submodule"]]);

    // The parked environment's teardown (a FAILED turn's) must not delete what could not be stored.
    const t2 = await b.turns.beginTurn({ sessionId });
    expect(t2.warm).toBe(true);
    await b.turns.endTurn({ turnId: t2.turnId, outcome: TurnOutcome.FAILED });
    expect(existsSync(env)).toBe(false);
    const kept = readdirSync(path.join(b.envRoot, ".unsaved")).filter((d) => d.startsWith(workspaceId));
    expect(kept).toHaveLength(1);
    expect(readFileSync(path.join(b.envRoot, ".unsaved", kept[0]!, "sub", "x.txt"), "utf8")).toBe("written inside the submodule\n");
    const events = await sql<{ reason: string }>`SELECT reason FROM events WHERE workspace_id = ${workspaceId}::uuid AND kind = 'turn.capture_failed'`.execute(b.database.opened.db);
    expect(events.rows.map((e) => e.reason)).toEqual(["SUBMODULE"]);
  });
});
