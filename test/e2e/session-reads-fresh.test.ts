/**
 * GetChangeset and ListSessions show a session as its row is now, even while this instance holds
 * the session live: another instance's strand reaches this one's live map a moment after it
 * commits (promise 1: a read on any instance reflects every committed change). The strand of
 * "another instance" is a direct UPDATE of the row, which tells this instance nothing: the
 * widest such moment, made on purpose.
 */
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { LifecycleState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { gitRepo } from "../overlay/helpers.js";

let berth: TestBerth;
beforeAll(async () => {
  berth = await startBerth({ instances: 1 });
});
afterAll(async () => {
  await berth?.close();
});

it("GetChangeset and ListSessions show a live session stranded elsewhere as STRANDED, from its row", async () => {
  const repoId = (await berth.grpc.registerRepository({ name: "fresh-reads", sourcePath: gitRepo().dir })).repository!.id;
  const ws = (await berth.grpc.createWorkspace({ repoId, mode: WorkspaceMode.PERSISTENT, agentId: "fresh-reader" })).workspace!;
  const before = (await berth.grpc.getChangeset({ changesetId: ws.changesetId })).sessions;
  expect(before.map((s) => s.lifecycleState)).toEqual([LifecycleState.ACTIVE]);

  await sql`UPDATE workspaces SET lifecycle = 'stranded', lifecycle_reason = 'explicit', stranded_at = now() WHERE session_id = ${ws.sessionId}::uuid`.execute(berth.database.opened.db);

  const review = await berth.grpc.getChangeset({ changesetId: ws.changesetId });
  expect(review.sessions.map((s) => [s.sessionId, s.lifecycleState, s.lifecycleReason])).toEqual([[ws.sessionId, LifecycleState.STRANDED, "explicit"]]);
  const listed = await berth.grpc.listSessions({ repoId, states: [LifecycleState.STRANDED] });
  expect(listed.sessions.map((s) => [s.sessionId, s.lifecycleState])).toEqual([[ws.sessionId, LifecycleState.STRANDED]]);
  expect((await berth.grpc.listSessions({ repoId, states: [LifecycleState.ACTIVE] })).sessions).toEqual([]);
});
