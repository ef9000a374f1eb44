/**
 * The environment is the agent's directory, marker included: whatever it puts in the marker's
 * place (a FIFO, a symlink to a file holding the token) is not a marker of ours. The liveness
 * probe and a teardown's identity check open it without blocking and without following links,
 * so neither hangs on a FIFO nor reads through a link; the environment is rebuilt cold and the
 * replaced directory is kept aside, never deleted as ours.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { TurnOutcome } from "../../gen/berth/v1/types_pb.js";
import { needs } from "../support/services.js";
import { makeGitRepo, newSession, startTurnBerth, type TurnBerth } from "./helpers.js";

needs({ postgres: true })("a marker the agent replaced", () => {
  let berth: TurnBerth;
  let source: string;
  let outside: string;

  beforeAll(async () => {
    source = makeGitRepo(5);
    outside = mkdtempSync(path.join(tmpdir(), "berth-outside-"));
    berth = await startTurnBerth({ instances: 1 }); // the environment is on this instance's disk
  });
  afterAll(async () => {
    await berth?.close();
    rmSync(source, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  const replacements: Record<string, (marker: string, token: string) => void> = {
    "a FIFO": (marker) => execFileSync("mkfifo", [marker]),
    "a symlink to a file holding the token": (marker, token) => {
      const target = path.join(outside, `token-${Date.now()}`);
      writeFileSync(target, token);
      symlinkSync(target, marker);
    },
  };

  for (const [what, replace] of Object.entries(replacements)) {
    it(`rebuilds cold, without hanging, an environment whose marker was replaced by ${what}, and keeps the old directory`, async () => {
      const { sessionId, workspaceId } = await newSession(berth, source);
      const first = await berth.turns.beginTurn({ sessionId });
      writeFileSync(path.join(first.environmentPath, "kept.txt"), "written before the marker was replaced\n");
      await berth.turns.endTurn({ turnId: first.turnId, outcome: TurnOutcome.COMPLETED }); // parked warm
      const marker = path.join(first.environmentPath, ".berth-env");
      const token = readFileSync(marker, "utf8");
      rmSync(marker);
      replace(marker, token);

      const second = await berth.turns.beginTurn({ sessionId }, { deadlineMs: 10_000 });
      expect(second.warm).toBe(false);
      // A fresh environment of ours in its place, the captured file materialised in it.
      expect(readFileSync(path.join(second.environmentPath, ".berth-env"), "utf8")).not.toBe(token);
      expect(readFileSync(path.join(second.environmentPath, "kept.txt"), "utf8")).toBe("written before the marker was replaced\n");
      await berth.turns.endTurn({ turnId: second.turnId, outcome: TurnOutcome.FAILED }, { deadlineMs: 10_000 });
      // The replaced directory was not deleted as ours: it is kept aside.
      const orphaned = path.join(berth.envRoot, ".orphaned");
      expect(existsSync(orphaned) && readdirSync(orphaned).some((d) => d.startsWith(workspaceId))).toBe(true);
    });
  }
});
