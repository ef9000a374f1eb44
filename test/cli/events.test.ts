/**
 * berth events watch as a long-running process: the replay-then-live tail in JSON, its filters,
 * and its reconnect across a server restart on the same port and database — resuming after the
 * last seq it printed, with no duplicate and no gap.
 */
import { afterAll, describe, expect, it } from "vitest";
import { ChangesetState, WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { Watcher, berth } from "./helpers.js";

interface EventJson {
  readonly seq: string;
  readonly kind: string;
  readonly repoId: string;
  readonly sessionId?: string;
}

const parse = (lines: readonly string[]) => lines.map((l) => JSON.parse(l) as EventJson);
const cleanup: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

/** Every stored event (seq and kind) of a repository, read back through WatchEvents. */
async function storedEvents(b: TestBerth, repoId: string, count: number): Promise<{ seq: bigint; kind: string }[]> {
  const out: { seq: bigint; kind: string }[] = [];
  const ac = new AbortController();
  for await (const r of b.connect.watchEvents({ afterSeq: 0n, repoIds: [repoId] }, { signal: ac.signal })) {
    out.push({ seq: r.event!.seq, kind: r.event!.kind });
    if (out.length === count) {
      ac.abort();
      break;
    }
  }
  return out;
}

/** One session's worth of events: created, stranded, resumed, then its changeset submitted. */
async function lifecycle(b: TestBerth, repoId: string): Promise<void> {
  const { workspace } = await b.grpc.createWorkspace({ repoId, baseCommit: "main", mode: WorkspaceMode.PERSISTENT, agentId: "claude-7" });
  await b.grpc.strandSession({ sessionId: workspace!.sessionId, reason: "test" });
  const resumed = await b.grpc.resumeSession({ deadSessionId: workspace!.sessionId, agentId: "claude-7" });
  await b.grpc.transitionChangeset({ changesetId: resumed.workspace!.changesetId, toState: ChangesetState.SUBMITTED });
}

describe("berth events watch", { timeout: 180_000 }, () => {
  it("replays from --after 0 then tails live, one proto3 JSON event per line, seqs strictly increasing", async () => {
    const b = await startBerth();
    cleanup.push(() => b.close());
    const { repository } = await b.grpc.registerRepository({ name: "cli-watch" });
    const repoId = repository!.id;
    await lifecycle(b, repoId); // 4 events stored before the watch starts

    const all = new Watcher(["events", "watch", "--json", "--after", "0", "--repo", repoId, "--server", b.server.httpUrl]);
    const sessions = new Watcher(["events", "watch", "--json", "--after", "0", "--repo", "cli-watch", "--kind", "session.*", "--server", b.server.httpUrl]);
    cleanup.push(() => all.kill(), () => sessions.kill());
    await all.waitForLines(4);
    await lifecycle(b, repoId); // 4 more, live

    const events = parse(await all.waitForLines(8));
    expect(events.map((e) => e.kind)).toEqual([
      "session.created",
      "session.stranded",
      "session.resumed",
      "changeset.transitioned",
      "session.created",
      "session.stranded",
      "session.resumed",
      "changeset.transitioned",
    ]);
    const seqs = events.map((e) => BigInt(e.seq));
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]! > seqs[i - 1]!).toBe(true);
    expect(events.every((e) => e.repoId === repoId)).toBe(true);
    expect(seqs).toEqual((await storedEvents(b, repoId, 8)).map((e) => e.seq));

    // The kind filter (and a repository given by name).
    const filtered = parse(await sessions.waitForLines(6));
    expect(filtered.map((e) => e.kind)).toEqual(["session.created", "session.stranded", "session.resumed", "session.created", "session.stranded", "session.resumed"]);

    // The human form: one line per event with seq, kind and short ids.
    const human = new Watcher(["events", "watch", "--after", "0", "--repo", repoId, "--server", b.server.httpUrl]);
    cleanup.push(() => human.kill());
    const lines = await human.waitForLines(8);
    expect(lines[0]).toMatch(new RegExp(`^\\s*${seqs[0]}\\s+\\d\\d:\\d\\d:\\d\\d\\.\\d{3}\\s+session\\.created\\s+repo ${repoId.slice(0, 8)}\\s+session [0-9a-f]{8}\\s+claude-7\\s+agent-1$`));
    expect(lines[3]).toMatch(/changeset\.transitioned .*DRAFT→SUBMITTED/);
    expect(lines.join("\n")).not.toContain("\x1b[");

    all.kill();
    sessions.kill();
    human.kill();
    await Promise.all([all.exited, sessions.exited, human.exited]);
  });

  it("reconnects after the server restarts on the same port and database, with no duplicate and no gap", async () => {
    const first = await startBerth();
    cleanup.push(() => first.close()); // drops the database at the end
    const port = first.server.httpPort;
    const { repository } = await first.grpc.registerRepository({ name: "cli-restart" });
    const repoId = repository!.id;
    await lifecycle(first, repoId);

    const watch = new Watcher(["events", "watch", "--json", "--after", "0", "--repo", repoId], { BERTH_SERVER: first.server.httpUrl });
    cleanup.push(() => watch.kill());
    await watch.waitForLines(4);

    // Events the watcher may not have printed yet when the server goes away: replayed after the reconnect.
    await lifecycle(first, repoId);
    await first.stop();
    await watch.waitForStderr(/reconnecting to http:\/\/127\.0\.0\.1:\d+ after seq \d+/);

    const second = await startBerth({ database: first.database, env: { BERTH_HTTP_ADDR: `127.0.0.1:${port}` } });
    cleanup.push(() => second.stop());
    expect(second.server.httpPort).toBe(port);
    await lifecycle(second, repoId);

    await watch.waitForLines(12, 60_000);
    // Let anything else arrive: the new instance's startup reconcile may add events of its own.
    await new Promise((r) => setTimeout(r, 1500));
    const events = parse(watch.lines);
    const seqs = events.map((e) => BigInt(e.seq));
    expect(new Set(seqs).size).toBe(seqs.length); // no duplicate
    const stored = await storedEvents(second, repoId, events.length);
    expect(seqs).toEqual(stored.map((e) => e.seq)); // no gap, same order
    expect(events.map((e) => e.kind)).toEqual(stored.map((e) => e.kind));
    expect(events.filter((e) => e.kind === "session.created")).toHaveLength(3);

    watch.kill();
    expect(await watch.exited).not.toBe(1);
  });

  it("fails at once, exit 3, when the server is unreachable before the first connection", async () => {
    const r = await berth(["events", "watch", "--after", "0", "--server", "http://127.0.0.1:1"]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/cannot reach the berth server at http:\/\/127\.0\.0\.1:1/);
  });

  it("refuses an unknown repository name (exit 2) and a bad kind pattern with the server's reason (exit 1)", async () => {
    const b = await startBerth();
    cleanup.push(() => b.close());
    const r = await berth(["events", "watch", "--repo", "not-a-uuid-or-name", "--server", b.server.httpUrl]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no repository named "not-a-uuid-or-name"/);
    const bad = await berth(["events", "watch", "--kind", "se*ss", "--server", b.server.httpUrl]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^berth: INVALID_ARGUMENT/m);
    expect(bad.stderr).toMatch(/field kinds/);
  });
});
