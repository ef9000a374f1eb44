/**
 * ResolveIdPrefix (issue 27): the short ids the console and events show name sessions,
 * workspaces, turns and changesets when they are unambiguous. Through a real server (gRPC and
 * Connect), on one instance and on two (every call to the next instance: the answer comes from
 * PostgreSQL, not from the instance that created the ids). Who sees which ids with auth on is in
 * the access matrix (test/e2e/access-matrix.test.ts).
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TurnService } from "../../gen/berth/v1/turn_service_pb.js";
import { TurnOutcome, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { IdKind } from "../../gen/berth/v1/workspace_service_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { failure } from "../support/rpc-error.js";
import { needs } from "../support/services.js";

/** A committed git repository, for turns. */
function gitSource(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-prefix-src-"));
  writeFileSync(path.join(dir, "README.md"), "# prefixes\n");
  const git = (...args: string[]) => execFileSync("git", ["-C", dir, ...args], { stdio: "pipe" });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "base");
  return dir;
}

/** Eight random hex digits: the start of the session ids one test chooses, shared by nothing else. */
const freshPrefix = () => randomBytes(4).toString("hex");
const sessionIdWith = (prefix: string, n: number) => `${prefix}-0000-4000-8000-${String(n).padStart(12, "0")}`;

for (const instances of [1, 2]) {
  const suite = instances === 1 ? (name: string, f: () => void) => describe(name, f) : needs({ postgres: true });
  suite(instances === 1 ? "ResolveIdPrefix" : "ResolveIdPrefix on two instances (each call to the next)", () => {
    let berth: TestBerth;
    let repoId: string;
    let turns: ReturnType<typeof createGrpcClient<typeof TurnService>>;
    beforeAll(async () => {
      berth = await startBerth({ instances });
      repoId = (await berth.grpc.registerRepository({ name: "prefixes", sourcePath: gitSource() })).repository!.id;
      turns = createGrpcClient(TurnService, berth.server.grpcAddress);
    });
    afterAll(async () => {
      turns?.close();
      await berth?.close();
    });

    const create = async (sessionId = "") =>
      (await berth.grpc.createWorkspace({ repoId, mode: WorkspaceMode.PERSISTENT, agentId: "claude-7", sessionId })).workspace!;

    it("names a session, its workspace, its changeset and a turn by the first 8 characters, over gRPC and Connect", { timeout: 60_000 }, async () => {
      const ws = await create();
      const turn = await turns.beginTurn({ sessionId: ws.sessionId });
      await turns.endTurn({ turnId: turn.turnId, outcome: TurnOutcome.COMPLETED });
      const cases: [IdKind, string][] = [
        [IdKind.SESSION, ws.sessionId],
        [IdKind.WORKSPACE, ws.workspaceId],
        [IdKind.CHANGESET, ws.changesetId],
        [IdKind.TURN, turn.turnId],
      ];
      for (const [kind, id] of cases) {
        for (const client of [berth.grpc, berth.connect]) {
          expect(await client.resolveIdPrefix({ kind, prefix: id.slice(0, 8) }), `${IdKind[kind]} ${id}`).toMatchObject({ ids: [id], more: false });
        }
      }
      // Upper case, dashes, a whole id: the same id.
      expect((await berth.grpc.resolveIdPrefix({ kind: IdKind.SESSION, prefix: ws.sessionId.slice(0, 11).toUpperCase() })).ids).toEqual([ws.sessionId]);
      expect((await berth.grpc.resolveIdPrefix({ kind: IdKind.SESSION, prefix: ws.sessionId })).ids).toEqual([ws.sessionId]);
      // A session id is not a turn id.
      expect((await berth.grpc.resolveIdPrefix({ kind: IdKind.TURN, prefix: ws.sessionId })).ids).toEqual([]);
    });

    it("answers every id a prefix is ambiguous between, ascending, and at most 10 with more=true", { timeout: 60_000 }, async () => {
      const p = freshPrefix();
      for (const n of [3, 1, 2]) await create(sessionIdWith(p, n));
      expect(await berth.grpc.resolveIdPrefix({ kind: IdKind.SESSION, prefix: p })).toMatchObject({ ids: [1, 2, 3].map((n) => sessionIdWith(p, n)), more: false });
      expect((await berth.connect.resolveIdPrefix({ kind: IdKind.SESSION, prefix: sessionIdWith(p, 2).slice(0, 35) })).ids).toEqual([sessionIdWith(p, 1), sessionIdWith(p, 2), sessionIdWith(p, 3)]);
      expect((await berth.connect.resolveIdPrefix({ kind: IdKind.SESSION, prefix: sessionIdWith(p, 2) })).ids).toEqual([sessionIdWith(p, 2)]);

      const q = freshPrefix();
      await Promise.all(Array.from({ length: 12 }, (_, n) => create(sessionIdWith(q, n))));
      const many = await berth.grpc.resolveIdPrefix({ kind: IdKind.SESSION, prefix: q });
      expect(many.ids).toEqual(Array.from({ length: 10 }, (_, n) => sessionIdWith(q, n)));
      expect(many.more).toBe(true);

      // Nothing starts so: an empty answer, not an error.
      expect(await berth.grpc.resolveIdPrefix({ kind: IdKind.SESSION, prefix: freshPrefix() })).toMatchObject({ ids: [], more: false });
    });

    it("names a resumed session's old id too (it still answers, SESSION_RESUMED)", { timeout: 60_000 }, async () => {
      const p = freshPrefix();
      const ws = await create(sessionIdWith(p, 1));
      await berth.grpc.strandSession({ sessionId: ws.sessionId, reason: "test" });
      const resumed = await berth.grpc.resumeSession({ deadSessionId: ws.sessionId, agentId: "claude-7" });
      expect((await berth.grpc.resolveIdPrefix({ kind: IdKind.SESSION, prefix: p })).ids).toEqual([ws.sessionId]);
      expect((await berth.grpc.resolveIdPrefix({ kind: IdKind.SESSION, prefix: resumed.newSessionId.slice(0, 8) })).ids).toEqual([resumed.newSessionId]);
    });

    it("refuses a prefix that is not the start of a UUID, or shorter than 4 hex digits, naming the field and the value", async () => {
      for (const [prefix, reason] of [["5e2g", "INVALID_FORMAT"], ["5e2b1c9a4", "INVALID_FORMAT"], ["5e2", "TOO_SHORT"], ["", "REQUIRED"]] as const) {
        const f = await failure(berth.grpc.resolveIdPrefix({ kind: IdKind.SESSION, prefix }));
        expect(f.code, prefix).toBe("INVALID_ARGUMENT");
        expect(f.metadata.field).toBe("prefix");
        if (prefix !== "") expect(f.message).toContain(`"${prefix}"`);
        expect(f.fields).toEqual(["prefix"]);
        expect(f.message).toMatch(reason === "TOO_SHORT" ? /at least 4 hex digits/ : reason === "REQUIRED" ? /required/ : /start of a UUID/);
      }
      const f = await failure(berth.grpc.resolveIdPrefix({ kind: IdKind.UNSPECIFIED, prefix: "5e2b" }));
      expect(f.code).toBe("INVALID_ARGUMENT");
      expect(f.fields).toEqual(["kind"]);
    });
  });
}
