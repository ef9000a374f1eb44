/**
 * A large committed file is read in bounded time and memory, and without holding up anybody
 * else's reads: one over BERTH_MAX_FILE_BYTES is refused before any of it is read, one under it
 * comes whole while another session's small reads go on. The files are sparse zeros (git
 * compresses them to almost nothing), so the repository is cheap to make.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { failure } from "../support/rpc-error.js";

const MiB = 1024 * 1024;
const LIMIT = 64 * MiB;
/** Under the limit: read whole. */
const LARGE = 40 * MiB;
/** Over it: refused. */
const HUGE = 72 * MiB;
const SMALL_FILES = 40;

function largeFilesRepo(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-large-"));
  const git = (...args: string[]) => execFileSync("git", ["-C", dir, ...args], { encoding: "utf8" }).trim();
  git("init", "-q", "-b", "main");
  for (let i = 0; i < SMALL_FILES; i++) writeFileSync(path.join(dir, `small-${i}.txt`), `small file ${i}\n`);
  for (const [name, size] of [["large.bin", LARGE], ["huge.bin", HUGE]] as const) {
    writeFileSync(path.join(dir, name), "");
    truncateSync(path.join(dir, name), size);
  }
  git("add", "-A");
  git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "base");
  return dir;
}

describe("ReadFile of a large base file", () => {
  let berth: TestBerth;
  let client: ReturnType<typeof createGrpcClient<typeof WorkspaceService>>;
  let repoId: string;

  beforeAll(async () => {
    const dir = largeFilesRepo();
    berth = await startBerth({ instances: 1, env: { BERTH_MAX_FILE_BYTES: String(LIMIT) } });
    // The client takes a response of any size: what is checked is the server's.
    client = createGrpcClient(WorkspaceService, berth.server.grpcAddress, { channelOptions: { "grpc.max_receive_message_length": -1 } });
    repoId = (await client.registerRepository({ name: "large-files", sourcePath: dir })).repository!.id;
  }, 60_000);
  afterAll(async () => {
    client?.close();
    await berth?.close();
  });

  const session = async (agentId: string) => (await client.createWorkspace({ repoId, mode: WorkspaceMode.EPHEMERAL, agentId })).workspace!.sessionId;

  it("refuses a base file over BERTH_MAX_FILE_BYTES with FILE_TOO_LARGE naming its size and the limit", async () => {
    const sessionId = await session("agent-huge");
    const f = await failure(client.readFile({ sessionId, path: "huge.bin" }, { deadlineMs: 60_000 }));
    expect({ code: f.code, reason: f.reason, metadata: f.metadata }).toEqual({
      code: "RESOURCE_EXHAUSTED",
      reason: "FILE_TOO_LARGE",
      metadata: { path: "huge.bin", size_bytes: String(HUGE), limit_bytes: String(LIMIT) },
    });
  }, 90_000);

  it("answers a large base file under the limit whole, in memory bounded by its size, while another session's small reads go on", async () => {
    const reader = await session("agent-large");
    const other = await session("agent-small");
    const order: string[] = [];
    const large = client.readFile({ sessionId: reader, path: "large.bin" }, { deadlineMs: 120_000 }).finally(() => order.push("large"));
    // Another session's small reads (each uncached), sent while the large one is under way.
    const small = Array.from({ length: SMALL_FILES }, (_, i) =>
      client.readFile({ sessionId: other, path: `small-${i}.txt` }, { deadlineMs: 30_000 }).finally(() => order.push(`small-${i}`)),
    );
    await Promise.allSettled([large, ...small]);
    // None waited for the large read (a queue shared with it holds them until its end).
    expect(order.at(-1)).toBe("large");
    const [r, ...smalls] = await Promise.all([large, ...small]);
    smalls.forEach((s, i) => expect(new TextDecoder().decode(s.content)).toBe(`small file ${i}\n`));
    expect(r.content.length).toBe(LARGE);
    expect(r.hash).toBe(createHash("sha256").update(Buffer.alloc(LARGE)).digest("hex"));
    expect(Buffer.from(r.content.buffer, r.content.byteOffset, r.content.byteLength).equals(Buffer.alloc(LARGE))).toBe(true);
  }, 180_000);

  it("holds a large base file's read in memory about its size once, not a buffer regrown per chunk", async () => {
    const sessionId = await session("agent-memory");
    const ws = await berth.server.registry.getWorkspace(sessionId);
    // The server's read path itself (ReadFile's, without the transport's copies, which are
    // the same for any response of that size).
    let peakRss = 0;
    let peakBuffers = 0;
    const before = process.memoryUsage();
    const sample = setInterval(() => {
      const m = process.memoryUsage();
      peakRss = Math.max(peakRss, m.rss);
      peakBuffers = Math.max(peakBuffers, m.arrayBuffers);
    }, 2);
    const r = await berth.server.overlay.readFile(ws, "large.bin").finally(() => clearInterval(sample));
    expect(r.content.length).toBe(LARGE);
    const growth = { rss: peakRss - before.rss, buffers: peakBuffers - before.arrayBuffers };
    expect({ rss: growth.rss < 2 * LARGE, buffers: growth.buffers < 2 * LARGE }, `growth ${JSON.stringify(growth)}`).toEqual({ rss: true, buffers: true });
  }, 120_000);
});
