/** berth commit and berth merge, run as the real binary against a real server and a real repository. */
import { execFileSync } from "node:child_process";
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

describe("berth commit and berth merge", { timeout: 120_000 }, () => {
  it("commits a changeset as a branch, then merges it into main; git log shows it", async () => {
    const source = gitFixture();
    const git = (...args: string[]) => execFileSync("git", ["-C", source, ...args], { encoding: "utf8" }).trim();
    const { repository } = await server.grpc.registerRepository({ name: "cli-landing", sourcePath: source });
    const { workspace } = await server.grpc.createWorkspace({ repoId: repository!.id, mode: WorkspaceMode.PERSISTENT, agentId: "claude-7", intent: "answer better" });
    const cs = workspace!.changesetId;
    await server.grpc.writeFile({ sessionId: workspace!.sessionId, path: "index.ts", content: new TextEncoder().encode("export const answer = 43;\n"), expectedHash: sha("export const answer = 42;\n") });

    const committed = await run("commit", cs, "-m", "Answer 43", "--author", "Ada Lovelace <ada@example.com>");
    expect(committed.code).toBe(0);
    const commit = git("rev-parse", `berth/${cs}`);
    expect(committed.stdout).toMatch(new RegExp(`^commit\\s+${commit}$`, "m"));
    expect(committed.stdout).toMatch(new RegExp(`^ref\\s+refs/heads/berth/${cs}$`, "m"));
    expect(git("log", "-1", "--format=%an <%ae> %s", commit)).toBe("Ada Lovelace <ada@example.com> Answer 43");
    const again = await berthJson<{ commitId: string; unchanged: boolean }>(["commit", cs, "-m", "Answer 43", "--author", "Ada Lovelace <ada@example.com>", "--server", url]);
    expect(again).toMatchObject({ commitId: commit, unchanged: true });

    const early = await run("merge", cs);
    expect(early.code).toBe(1);
    expect(early.stderr).toMatch(/INVALID_TRANSITION/);
    for (const to of [ChangesetState.SUBMITTED, ChangesetState.VERIFYING, ChangesetState.APPROVED]) await server.grpc.transitionChangeset({ changesetId: cs, toState: to });
    const merged = await run("merge", cs, "--target", "main");
    expect(merged.code).toBe(0);
    expect(merged.stdout).toMatch(/^state\s+MERGED$/m);
    expect(merged.stdout).toMatch(/^fast-forward\s+yes$/m);
    expect(git("log", "--format=%s", "main")).toBe("Answer 43\nfixture");
  });

  it("refuses a malformed --author as a usage error (exit 2) without calling the server", async () => {
    const r = await berth(["commit", "00000000-0000-4000-8000-000000000000", "--author", "nobody", "--server", "http://127.0.0.1:1"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/expected "Name <email>"/);
  });
});
