/**
 * Landing on two instances behind a per-call balancer (each call to the next instance): the
 * commit written by one, recorded and merged by the other, the events once each.
 */
import { afterAll, beforeAll, expect } from "vitest";
import { ChangesetState } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { needs } from "../support/services.js";
import { BASE_FILES, approve, eventsUntil, gitRepo, registered, treeOf, write } from "./helpers.js";

needs({ postgres: true })("landing on two instances", () => {
  let berth: TestBerth;
  beforeAll(async () => {
    berth = await startBerth({ kind: "postgres", instances: 2 });
  });
  afterAll(async () => {
    await berth?.close();
  });

  needs({ postgres: true }).it("commits on one instance, finds it idempotent on the other, and merges", async () => {
    expect(berth.servers).toHaveLength(2);
    const repo = gitRepo();
    const { repoId, open } = await registered(berth.grpc, repo, "land-two");
    const ws = await open("agent-a", { intent: "Two instances" });
    await write(berth.grpc, ws.sessionId, "src/app.ts", "export const answer = 42;\n");
    const first = await berth.grpc.commitChangeset({ changesetId: ws.changesetId });
    const second = await berth.grpc.commitChangeset({ changesetId: ws.changesetId });
    expect(second).toMatchObject({ commitId: first.commitId, unchanged: true });
    await approve(berth.grpc, ws.changesetId);
    repo.commitOn("main", { "README.md": "# moved\n" }, "moved");
    const merged = await berth.grpc.transitionChangeset({ changesetId: ws.changesetId, toState: ChangesetState.MERGED });
    expect(merged.merge).toMatchObject({ changesetCommitId: first.commitId, fastForward: false });
    expect(repo.git("rev-parse", "main")).toBe(merged.merge!.newCommitId);
    const tree = treeOf(repo, "main");
    expect(tree.get("src/app.ts")![1]).toBe("export const answer = 42;\n");
    expect(tree.get("notes.txt")![1]).toBe(BASE_FILES["notes.txt"]);
    const kinds = (await eventsUntil(berth.grpc, repoId, ["changeset.committed", "changeset.merged"], 2)).map((e) => e.kind);
    expect(kinds).toEqual(["changeset.committed", "changeset.merged"]);
  });
});
