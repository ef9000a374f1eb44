/**
 * examples/nats: the durable JetStream consumer of berth.session.> run against a real server
 * whose relay publishes to a real nats-server (a private one, as test/events/ does, so the
 * stream's berth.> subjects cannot overlap another test's).
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { WorkspaceMode } from "../../gen/berth/v1/types_pb.js";
import { NatsServer, until } from "../events/helpers.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { needs } from "../support/services.js";
import { run } from "./helpers.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TSX = path.join(ROOT, "node_modules/.bin/tsx");
needs({ natsServer: true })("examples/nats", () => {
  let nats: NatsServer;
  let berth: TestBerth;
  beforeAll(async () => {
    nats = await NatsServer.launch();
    berth = await startBerth({ env: { NATS_URL: nats.url } });
  });
  afterAll(async () => {
    await berth?.close();
    await nats?.destroy();
  });

  it("consumes session events with a durable pull consumer, resuming after what it acknowledged", async () => {
    const repo = (await berth.connect.registerRepository({ name: "nats-example" })).repository!;
    const ws = (await berth.connect.createWorkspace({ repoId: repo.id, baseCommit: "main", mode: WorkspaceMode.EPHEMERAL, agentId: "claude-n" })).workspace!;
    await berth.connect.strandSession({ sessionId: ws.sessionId, reason: "nats example" });
    await berth.server.events.sync();
    const head = berth.server.events.headSeq;
    await until(() => (berth.server.relay?.publishedSeq ?? 0n) >= head, 15_000, "relay published");

    const args = ["examples/nats/consumer.ts", "--server", nats.url, "--durable", "example-test", "--idle-exit-ms", "1500"];
    const first = await run(TSX, [...args, "--count", "2"], { cwd: ROOT });
    if (first.code !== 0) console.error(first.stdout, first.stderr);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/created durable consumer example-test on BERTH_EVENTS \(berth\.session\.>\)/);
    expect(first.stdout).toMatch(new RegExp(`seq \\d+ session\\.created repo=${repo.id} session=${ws.sessionId}`));
    expect(first.stdout).toMatch(new RegExp(`seq \\d+ session\\.stranded repo=${repo.id} session=${ws.sessionId} .*reason=nats example subject=berth\\.session\\.stranded\\.${repo.id}`));
    expect(first.stdout).toMatch(/consumed 2 events/);

    // The durable consumer resumes after what it acknowledged: only the new event arrives.
    await berth.connect.resumeSession({ deadSessionId: ws.sessionId, agentId: "claude-n" });
    await berth.server.events.sync();
    const after = berth.server.events.headSeq;
    await until(() => (berth.server.relay?.publishedSeq ?? 0n) >= after, 15_000, "relay published the resume");
    const second = await run(TSX, args, { cwd: ROOT });
    expect(second.code).toBe(0);
    expect(second.stdout).not.toMatch(/created durable consumer/);
    expect(second.stdout).toMatch(/session\.resumed/);
    expect(second.stdout).not.toMatch(/session\.created|session\.stranded/);
    expect(second.stdout).toMatch(/consumed 1 events/);
  });
});
