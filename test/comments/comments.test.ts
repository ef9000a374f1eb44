/**
 * Review comments (issue 29) through a real server with auth on: a reviewer (an admin) and the
 * agent on the changeset add, list and resolve them; the events reach WatchEvents; an agent that
 * may not read the changeset is refused every call; the fields are validated.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IdKind, WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import type { Event } from "../../gen/berth/v1/event_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { failure } from "../support/rpc-error.js";
import { gitRepo } from "../overlay/helpers.js";
import { optional } from "../support/services.js";
import { NatsServer, until } from "../events/helpers.js";
import { connect } from "@nats-io/transport-node";
import { AckPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";

const sha = (t: string) => createHash("sha256").update(t).digest("hex");
const TOKENS = { alice: randomBytes(16).toString("hex"), bob: randomBytes(16).toString("hex"), ops: randomBytes(16).toString("hex") };

const jetStream = optional({ natsServer: true }, "that JetStream gets the comment events");
let nats: NatsServer | undefined;
let berth: TestBerth;
let repoId: string;
type Client = ReturnType<typeof createGrpcClient<typeof WorkspaceService>>;
let alice: Client;
let bob: Client;
let ops: Client;

beforeAll(async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-comments-"));
  const file = path.join(dir, "tokens.json");
  writeFileSync(file, JSON.stringify({
    tokens: [
      { sha256: sha(TOKENS.alice), agent_id: "alice", roles: ["agent"], repos: ["*"] },
      // Granted the repository, but not on alice's changeset.
      { sha256: sha(TOKENS.bob), agent_id: "bob", roles: ["agent"], repos: ["*"] },
      { sha256: sha(TOKENS.ops), agent_id: "ops", roles: ["agent", "admin"] },
    ],
  }));
  if (jetStream.ok) nats = await NatsServer.launch();
  berth = await startBerth({ env: { BERTH_AUTH: "token", BERTH_AUTH_TOKENS_FILE: file, ...(nats ? { NATS_URL: nats.url } : {}) } });
  const client = (token: string) => createGrpcClient(WorkspaceService, berth.server.grpcAddress, { metadata: { authorization: `Bearer ${token}` } });
  alice = client(TOKENS.alice);
  bob = client(TOKENS.bob);
  ops = client(TOKENS.ops);
  repoId = (await ops.registerRepository({ name: "comments-demo", sourcePath: gitRepo().dir })).repository!.id;
});
afterAll(async () => {
  for (const c of [alice, bob, ops]) c?.close();
  await berth?.close();
  await nats?.destroy();
});

async function changeset(): Promise<{ sessionId: string; changesetId: string }> {
  const { workspace } = await alice.createWorkspace({ repoId, mode: WorkspaceMode.PERSISTENT });
  return { sessionId: workspace!.sessionId, changesetId: workspace!.changesetId };
}

describe("review comments", () => {
  it("a reviewer's comment on a line is listed for the agent, resolved once by the agent, and kept", async () => {
    const { changesetId } = await changeset();
    const { comment } = await ops.addComment({ changesetId, path: "src/util.ts", line: 3, body: "check the bounds\nhere" });
    expect(comment).toMatchObject({ changesetId, path: "src/util.ts", line: 3, body: "check the bounds\nhere", author: "ops", resolved: false, resolvedBy: "" });
    expect(comment!.createdAt).toBeDefined();
    const whole = (await alice.addComment({ changesetId, body: "looks good overall" })).comment!;
    expect(whole).toMatchObject({ path: "", line: 0, author: "alice" });

    const open = await alice.listComments({ changesetId });
    expect(open.comments.map((c) => c.id)).toEqual([comment!.id, whole.id]);

    const resolved = (await alice.resolveComment({ commentId: comment!.id })).comment!;
    expect(resolved).toMatchObject({ id: comment!.id, resolved: true, resolvedBy: "alice" });
    // Idempotent: the first resolver and time stay.
    const again = (await ops.resolveComment({ commentId: comment!.id })).comment!;
    expect(again).toMatchObject({ resolved: true, resolvedBy: "alice" });
    expect(again.resolvedAt).toEqual(resolved.resolvedAt);

    expect((await alice.listComments({ changesetId })).comments.map((c) => c.id)).toEqual([whole.id]);
    const all = await alice.listComments({ changesetId, includeResolved: true });
    expect(all.comments.map((c) => [c.id, c.resolved])).toEqual([[comment!.id, true], [whole.id, false]]);
  });

  it("pages the comments oldest first", async () => {
    const { changesetId } = await changeset();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await alice.addComment({ changesetId, body: `note ${i}` })).comment!.id);
    const seen: string[] = [];
    let pageToken = "";
    let pages = 0;
    do {
      const page = await alice.listComments({ changesetId, pageSize: 2, pageToken });
      expect(page.comments.length).toBeLessThanOrEqual(2);
      seen.push(...page.comments.map((c) => c.id));
      pageToken = page.nextPageToken;
      pages++;
    } while (pageToken !== "");
    expect(seen).toEqual(ids);
    expect(pages).toBe(3);
  });

  it("announces comment.added and comment.resolved on WatchEvents and JetStream, without the body", jetStream.options, async () => {
    const { changesetId } = await changeset();
    const abort = new AbortController();
    const got: Event[] = [];
    const watching = (async () => {
      for await (const m of ops.watchEvents({ repoIds: [repoId], kinds: ["comment.*"] }, { signal: abort.signal })) {
        if (m.event?.changesetId !== changesetId) continue;
        got.push(m.event);
        if (got.length === 2) return;
      }
    })().catch((err: unknown) => {
      if (!abort.signal.aborted) throw err;
    });
    const { comment } = await ops.addComment({ changesetId, path: "README.md", line: 1, body: "secret-ish review text" });
    await alice.resolveComment({ commentId: comment!.id });
    await watching;
    abort.abort();
    expect(got.map((e) => [e.kind, e.agentId, e.repoId])).toEqual([["comment.added", "ops", repoId], ["comment.resolved", "alice", repoId]]);
    for (const e of got) {
      expect(e.payload.case).toBe("commentChanged");
      expect(e.payload.value).toMatchObject({ commentId: comment!.id, path: "README.md", line: 1 });
    }
    expect(JSON.stringify(got, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v))).not.toContain("secret-ish");

    if (nats) {
      await until(async () => (berth.server.relay?.publishedSeq ?? 0n) >= got[1]!.seq, 15_000, "relay");
      const nc = await connect({ servers: nats.url });
      try {
        const jsm = await jetstreamManager(nc);
        await jsm.consumers.add("BERTH_EVENTS", { durable_name: "comments", ack_policy: AckPolicy.Explicit, filter_subject: `berth.comment.*.${repoId}` });
        const c = await jetstream(nc).consumers.get("BERTH_EVENTS", "comments");
        const seen = new Map<string, string>();
        for (;;) {
          const m = await c.next({ expires: 2000 });
          if (!m) break;
          seen.set(m.headers!.get("Nats-Msg-Id"), m.subject);
          m.ack();
        }
        expect(got.map((e) => seen.get(e.id))).toEqual([`berth.comment.added.${repoId}`, `berth.comment.resolved.${repoId}`]);
      } finally {
        await nc.close();
      }
    }
  });

  it("refuses an agent that may not read the changeset, on every call, as DiffChangeset does", async () => {
    const { changesetId } = await changeset();
    const { comment } = await alice.addComment({ changesetId, body: "mine" });
    // One call at a time: a refusal made before it is awaited would be an unhandled rejection.
    const calls = [() => bob.addComment({ changesetId, body: "drive-by" }), () => bob.listComments({ changesetId }), () => bob.resolveComment({ commentId: comment!.id }), () => bob.diffChangeset({ changesetId })];
    for (const call of calls) {
      const f = await failure(call());
      expect([f.code, f.reason]).toEqual(["PERMISSION_DENIED", "NOT_CHANGESET_OWNER"]);
    }
    // Nothing was written or resolved by the refused calls.
    const all = await alice.listComments({ changesetId, includeResolved: true });
    expect(all.comments.map((c) => [c.body, c.resolved])).toEqual([["mine", false]]);
  });

  it("names the bad field: body, path, line, ids; unknown ids are NOT_FOUND", async () => {
    const { changesetId } = await changeset();
    const bad = async (req: Parameters<Client["addComment"]>[0], field: string, says: string) => {
      const f = await failure(ops.addComment(req));
      expect(f.code).toBe("INVALID_ARGUMENT");
      expect(f.fields).toEqual([field]);
      expect(f.message.toLowerCase()).toContain(says);
    };
    await bad({ changesetId, body: "" }, "body", "required");
    await bad({ changesetId, body: "x".repeat(10_001) }, "body", "at most 10000");
    await bad({ changesetId, body: "ok", path: "../etc/passwd" }, "path", "..");
    await bad({ changesetId, body: "ok", path: "/abs" }, "path", "relative");
    await bad({ changesetId, body: "ok", line: 4 }, "line", "set path");
    await bad({ changesetId: "nope", body: "ok" }, "changeset_id", "uuid");
    expect((await ops.addComment({ changesetId, body: "x".repeat(10_000) })).comment!.body.length).toBe(10_000);

    const missing = await failure(ops.addComment({ changesetId: "00000000-0000-4000-8000-000000000000", body: "ok" }));
    expect([missing.code, missing.reason]).toEqual(["NOT_FOUND", "CHANGESET_NOT_FOUND"]);
    const noComment = await failure(ops.resolveComment({ commentId: "00000000-0000-4000-8000-000000000000" }));
    expect([noComment.code, noComment.reason]).toEqual(["NOT_FOUND", "COMMENT_NOT_FOUND"]);
    const token = await failure(ops.listComments({ changesetId, pageToken: "bm9wZQ" }));
    expect(token.fields).toEqual(["page_token"]);
  });

  it("resolves a comment's short id for the agent on its changeset, not for another", async () => {
    const { changesetId } = await changeset();
    const { comment } = await ops.addComment({ changesetId, body: "short ids" });
    const prefix = comment!.id.slice(0, 8);
    expect((await alice.resolveIdPrefix({ kind: IdKind.COMMENT, prefix })).ids).toContain(comment!.id);
    expect((await bob.resolveIdPrefix({ kind: IdKind.COMMENT, prefix })).ids).not.toContain(comment!.id);
  });
});
