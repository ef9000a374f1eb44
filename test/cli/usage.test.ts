/**
 * Usage errors of the berth command (issue 27): a missing required flag or argument is named,
 * with the command's help, exit 2, before anything is sent — the server these commands are
 * pointed at does not exist, so a command that called it would exit 3 instead.
 */
import { describe, expect, it } from "vitest";
import { berth } from "./helpers.js";

const NOWHERE = "http://127.0.0.1:1";
/** berth … against no server, with no agent or token in the environment. */
const run = (args: string[], env: Record<string, string> = {}) => berth([...args, "--server", NOWHERE], { BERTH_AGENT: "", ...env });

describe("berth usage errors", { timeout: 120_000 }, () => {
  it("names a flag the command needs (workspace create --agent, --repo, --onto), exit 2, without calling the server", async () => {
    const cases: [string[], RegExp][] = [
      [["workspace", "create", "--repo", "tour"], /^error: required option '--agent <id>' not specified \(or BERTH_AGENT; with auth on, BERTH_TOKEN's agent\)$/m],
      // The flag is checked before the changeset's short id would be resolved (a server call).
      [["workspace", "create", "--repo", "tour", "--changeset", "5e2b1c9a"], /^error: required option '--agent <id>' not specified/m],
      [["workspace", "create", "--agent", "claude-7"], /^error: required option '--repo <repo>' not specified$/m],
      [["who-touched", "hello.txt"], /^error: required option '--repo <repo>' not specified$/m],
      [["sessions", "ls"], /^error: required option '--repo <id>' not specified$/m],
      [["rebase", "5e2b1c9a"], /^error: required option '--onto <rev>' not specified$/m],
      [["diff"], /^error: missing required argument 'session' \(or --changeset <id>\)$/m],
      [["diff", "5e2b1c9a", "--changeset", "c9f0a7d3"], /^error: give a session or --changeset <id>, not both$/m],
      [["claim", "5e2b1c9a"], /^error: missing required argument 'path'$/m],
      [["turn", "end"], /^error: missing required argument 'turn'$/m],
    ];
    const results = await Promise.all(cases.map(([args]) => run(args)));
    results.forEach((r, i) => {
      const [args, message] = cases[i]!;
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(2);
      expect(r.stderr, args.join(" ")).toMatch(message);
      expect(r.stderr, args.join(" ")).toMatch(/^Usage: berth /m);
      expect(r.stdout).toBe("");
    });
  });

  it("says it as one JSON line with --json", async () => {
    const r = await run(["workspace", "create", "--repo", "tour", "--json"]);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stderr)).toEqual({
      code: "INVALID_ARGUMENT",
      reason: "USAGE",
      message: "required option '--agent <id>' not specified (or BERTH_AGENT; with auth on, BERTH_TOKEN's agent)",
      details: {},
    });
  });

  it("asks no flag that the environment gives: BERTH_AGENT, or a token (auth on: the token's agent)", async () => {
    const [byAgent, byToken] = await Promise.all([
      run(["workspace", "create", "--repo", "tour"], { BERTH_AGENT: "claude-7" }),
      run(["workspace", "create", "--repo", "tour"], { BERTH_TOKEN: "a-token" }),
    ]);
    // Past the usage check: it went for the server, which is not there.
    for (const r of [byAgent, byToken]) {
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toMatch(/cannot reach the berth server/);
    }
  });
});
