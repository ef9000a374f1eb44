/**
 * Separation of duties (issue 29): under a repository's independent_review policy (the default
 * for new repositories) APPROVED and MERGED come from a principal other than the changeset's
 * authors — a reviewer or an admin. A real server with token auth, calls through grpc-js.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChangesetState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { failure } from "../support/rpc-error.js";

const sha = (t: string) => createHash("sha256").update(t).digest("hex");
const TOKENS = { alice: randomBytes(16).toString("hex"), rita: randomBytes(16).toString("hex"), ops: randomBytes(16).toString("hex"), bob: randomBytes(16).toString("hex") };

describe("separation of duties: independent_review", () => {
  let berth: TestBerth;
  const as = (who: keyof typeof TOKENS) => createGrpcClient(WorkspaceService, berth.server.grpcAddress, { metadata: { authorization: `Bearer ${TOKENS[who]}` } });

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "berth-review-"));
    const file = path.join(dir, "tokens.json");
    writeFileSync(file, JSON.stringify({
      tokens: [
        { sha256: sha(TOKENS.alice), agent_id: "alice", roles: ["agent"], repos: ["*"] },
        { sha256: sha(TOKENS.bob), agent_id: "bob", roles: ["agent"], repos: ["*"] },
        { sha256: sha(TOKENS.rita), agent_id: "rita", roles: ["reviewer"], repos: ["*"] },
        { sha256: sha(TOKENS.ops), agent_id: "ops", roles: ["agent", "admin"] },
      ],
    }));
    berth = await startBerth({ env: { BERTH_AUTH: "token", BERTH_AUTH_TOKENS_FILE: file, BERTH_ENV_ROOT: path.join(dir, "envs") } });
  });
  afterAll(async () => {
    await berth?.close();
  });

  /** A changeset of alice's, moved up to VERIFYING by alice herself (no policy stops that). */
  async function verifying(repoId: string) {
    const alice = as("alice");
    const { workspace } = await alice.createWorkspace({ repoId, baseCommit: "main", mode: WorkspaceMode.PERSISTENT });
    const id = workspace!.changesetId;
    await alice.transitionChangeset({ changesetId: id, toState: ChangesetState.SUBMITTED });
    await alice.transitionChangeset({ changesetId: id, toState: ChangesetState.VERIFYING });
    return id;
  }

  it("refuses the author's own approval and merge under the policy, naming the rule; a reviewer's approval is accepted", async () => {
    const repo = (await as("alice").registerRepository({ name: "reviewed" })).repository!;
    expect(repo.independentReview).toBe(true);
    const id = await verifying(repo.id);

    const own = await failure(as("alice").transitionChangeset({ changesetId: id, toState: ChangesetState.APPROVED }));
    expect(own).toMatchObject({ code: "PERMISSION_DENIED", reason: "INDEPENDENT_REVIEW_REQUIRED" });
    expect(own.metadata).toMatchObject({ changeset_id: id, agent_id: "alice", to_state: "APPROVED", rule: "independent_review" });
    expect(own.message).toContain("a reviewer or an admin");

    const approved = await as("rita").transitionChangeset({ changesetId: id, toState: ChangesetState.APPROVED, reason: "looks right" });
    expect(approved.changeset?.state).toBe(ChangesetState.APPROVED);
    const merge = await failure(as("alice").transitionChangeset({ changesetId: id, toState: ChangesetState.MERGED }));
    expect(merge).toMatchObject({ code: "PERMISSION_DENIED", reason: "INDEPENDENT_REVIEW_REQUIRED" });
    expect(merge.metadata.to_state).toBe("MERGED");
    expect((await as("alice").listRepositories({})).repositories.find((r) => r.id === repo.id)?.independentReview).toBe(true);

    // An admin not on the changeset decides too; an agent neither on it nor a reviewer does not.
    const other = await verifying(repo.id);
    expect(await failure(as("bob").transitionChangeset({ changesetId: other, toState: ChangesetState.APPROVED }))).toMatchObject({ reason: "NOT_CHANGESET_OWNER" });
    expect((await as("ops").transitionChangeset({ changesetId: other, toState: ChangesetState.REJECTED, reason: "no" })).changeset?.state).toBe(ChangesetState.REJECTED);
  });

  it("a reviewer reads and decides but owns no session and writes nothing, and only moves to its states", async () => {
    const repoId = (await as("ops").registerRepository({ name: "reviewer-limits" })).repository!.id;
    const rita = as("rita");
    expect(await failure(rita.createWorkspace({ repoId, baseCommit: "main", mode: WorkspaceMode.PERSISTENT }))).toMatchObject({
      code: "PERMISSION_DENIED",
      reason: "ROLE_REQUIRED",
      metadata: { role: "agent" },
    });
    const { workspace } = await as("alice").createWorkspace({ repoId, baseCommit: "main", mode: WorkspaceMode.PERSISTENT });
    expect(await failure(rita.writeFile({ sessionId: workspace!.sessionId, path: "x.ts", content: new Uint8Array([1]) }))).toMatchObject({ reason: "NOT_SESSION_OWNER" });
    // SUBMITTED is the authors' move, not a reviewer's.
    expect(await failure(rita.transitionChangeset({ changesetId: workspace!.changesetId, toState: ChangesetState.SUBMITTED }))).toMatchObject({ reason: "NOT_CHANGESET_OWNER" });
    await as("alice").transitionChangeset({ changesetId: workspace!.changesetId, toState: ChangesetState.SUBMITTED });
    await as("alice").transitionChangeset({ changesetId: workspace!.changesetId, toState: ChangesetState.VERIFYING });
    expect((await rita.transitionChangeset({ changesetId: workspace!.changesetId, toState: ChangesetState.REJECTED, reason: "tests fail" })).changeset?.state).toBe(ChangesetState.REJECTED);
  });

  it("with the policy off (UpdateRepository by an admin, or opted out at registration) the author approves its own work", async () => {
    const repo = (await as("alice").registerRepository({ name: "self-approved" })).repository!;
    expect(repo.independentReview).toBe(true);
    const updated = await as("ops").updateRepository({ repositoryId: repo.id, independentReview: false });
    expect(updated.repository?.independentReview).toBe(false);
    const id = await verifying(repo.id);
    expect((await as("alice").transitionChangeset({ changesetId: id, toState: ChangesetState.APPROVED })).changeset?.state).toBe(ChangesetState.APPROVED);
    // Back on: the next author's approval is refused at once (the policy is read from PostgreSQL on each call).
    await as("ops").updateRepository({ repositoryId: repo.id, independentReview: true });
    const next = await verifying(repo.id);
    expect(await failure(as("alice").transitionChangeset({ changesetId: next, toState: ChangesetState.APPROVED }))).toMatchObject({ reason: "INDEPENDENT_REVIEW_REQUIRED" });

    const optedOut = (await as("alice").registerRepository({ name: "opted-out", independentReview: false })).repository!;
    expect(optedOut.independentReview).toBe(false);
    const mine = await verifying(optedOut.id);
    expect((await as("alice").transitionChangeset({ changesetId: mine, toState: ChangesetState.APPROVED })).changeset?.state).toBe(ChangesetState.APPROVED);
  });

  it("UpdateRepository is an admin's: an agent and a reviewer are refused, nothing changes", async () => {
    const repo = (await as("alice").registerRepository({ name: "guarded" })).repository!;
    for (const who of ["alice", "rita"] as const) {
      expect(await failure(as(who).updateRepository({ repositoryId: repo.id, independentReview: false }))).toMatchObject({ code: "PERMISSION_DENIED", reason: "ROLE_REQUIRED", metadata: { role: "admin" } });
    }
    expect((await as("ops").listRepositories({})).repositories.find((r) => r.id === repo.id)?.independentReview).toBe(true);
    expect(await failure(as("ops").updateRepository({ repositoryId: "not-a-uuid", independentReview: false }))).toMatchObject({ code: "INVALID_ARGUMENT", fields: ["repository_id"] });
    expect(await failure(as("ops").updateRepository({ repositoryId: "00000000-0000-4000-8000-000000000000", independentReview: false }))).toMatchObject({ code: "NOT_FOUND", reason: "REPOSITORY_NOT_FOUND" });
  });
});
