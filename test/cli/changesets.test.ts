/** berth changeset ls and berth changeset show, run as the real binary against a real server and a real repository. */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChangesetState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { berth, berthJson, gitFixture } from "./helpers.js";

let server: TestBerth;
let url: string;
const run = (...args: string[]) => berth([...args, "--server", url]);
const sha = (s: string) => createHash("sha256").update(s).digest("hex");

beforeAll(async () => {
  server = await startBerth();
  url = server.server.httpUrl;
});
afterAll(async () => {
  await server?.close();
});

describe("berth changeset ls and show", { timeout: 120_000 }, () => {
  it("lists a repository's changesets by state, as a table and as JSON", async () => {
    const { repository } = await server.grpc.registerRepository({ name: "cli-cs-list" });
    const open = async (agentId: string) => (await server.grpc.createWorkspace({ repoId: repository!.id, mode: WorkspaceMode.PERSISTENT, agentId, baseCommit: "main" })).workspace!.changesetId;
    const draft = await open("a");
    const submitted = await open("b");
    await server.grpc.transitionChangeset({ changesetId: submitted, toState: ChangesetState.SUBMITTED, reason: "please review" });

    const all = await run("changeset", "ls", "--repo", "cli-cs-list");
    expect(all.code).toBe(0);
    const rows = all.stdout.trim().split("\n");
    expect(rows[0]).toMatch(/^CHANGESET\s+STATE\s+UPDATED\s+COMMIT\s+REASON$/);
    expect(rows.slice(1).map((r) => r.split(/\s+/).slice(0, 2))).toEqual([[submitted, "SUBMITTED"], [draft, "DRAFT"]]);

    const waiting = await berthJson<{ changesets: { id: string; state: string; reason: string }[] }>(["changeset", "ls", "--repo", repository!.id, "--state", "submitted", "--state", "approved", "--server", url]);
    expect(waiting.changesets).toEqual([expect.objectContaining({ id: submitted, state: "CHANGESET_STATE_SUBMITTED", reason: "please review" })]);
    expect((await run("changeset", "ls", "--repo", "cli-cs-list", "--state", "merged")).stdout).toBe("no changesets in those states\n");

    const bad = await run("changeset", "ls", "--repo", "cli-cs-list", "--state", "reviewing");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/expected one of draft, submitted/);
    expect((await run("changeset", "ls")).code).toBe(2);
  });

  it("shows a changeset by its short id: state, history with who and why, sessions, diff summary, commit and branch", async () => {
    const source = gitFixture();
    const { repository } = await server.grpc.registerRepository({ name: "cli-cs-show", sourcePath: source });
    const { workspace } = await server.grpc.createWorkspace({ repoId: repository!.id, mode: WorkspaceMode.PERSISTENT, agentId: "claude-7", intent: "answer better" });
    const cs = workspace!.changesetId;
    await server.grpc.writeFile({ sessionId: workspace!.sessionId, path: "index.ts", content: new TextEncoder().encode("export const answer = 43;\nexport const more = 1;\n"), expectedHash: sha("export const answer = 42;\n") });
    const committed = await server.grpc.commitChangeset({ changesetId: cs, message: "Answer 43" });
    await server.grpc.transitionChangeset({ changesetId: cs, toState: ChangesetState.SUBMITTED, reason: "ready" });
    await server.grpc.transitionChangeset({ changesetId: cs, toState: ChangesetState.DRAFT, reason: "needs a test" });

    const shown = await run("changeset", "show", cs.slice(0, 8));
    expect(shown.code).toBe(0);
    const out = shown.stdout;
    expect(out).toMatch(new RegExp(`^changeset\\s+${cs}$`, "m"));
    expect(out).toMatch(/^state\s+DRAFT$/m);
    expect(out).toMatch(new RegExp(`^commit\\s+${committed.commitId}$`, "m"));
    expect(out).toMatch(new RegExp(`^branch\\s+refs/heads/berth/${cs}$`, "m"));
    expect(out).toMatch(/^you may move it to\s+SUBMITTED, CLOSED$/m);
    expect(out).toMatch(/\sDRAFT\s+SUBMITTED\s+anonymous\s+ready$/m);
    expect(out).toMatch(/\sSUBMITTED\s+DRAFT\s+anonymous\s+needs a test$/m);
    expect(out).toMatch(new RegExp(`^${workspace!.sessionId}\\s+${workspace!.agentName} \\(claude-7\\)\\s+ACTIVE\\s+answer better$`, "m"));
    expect(out).toMatch(/^\+2 -1\tindex\.ts$/m);
    expect(out).toMatch(/^1 path\(s\) changed, \+2 -1$/m);

    const json = await berthJson<{ changeset: { id: string; state: string }; transitions: unknown[]; branch: string; diff: { paths: { path: string }[]; patch?: string } }>(["changeset", "show", cs, "--server", url]);
    expect(json).toMatchObject({ changeset: { id: cs, state: "CHANGESET_STATE_DRAFT" }, branch: `refs/heads/berth/${cs}` });
    expect(json.transitions).toHaveLength(2);
    expect(json.diff.paths.map((p) => p.path)).toEqual(["index.ts"]);
    expect(json.diff.patch).toBeUndefined();

    const unknown = await run("changeset", "show", "00000000-0000-4000-8000-000000000000");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/NOT_FOUND CHANGESET_NOT_FOUND/);
  });
});
