/**
 * A changeset ten times the landing scenario's (issue 30): 10,000 new 4 KiB files written into one
 * session (WriteFile, 16 in flight, not timed), then CommitChangeset, with the server's resident
 * set sampled every 5 ms from /proc while it runs. Target: it completes, and the RSS grows by
 * less than twice the changed bytes. Side by side (report): `git add -A && git commit` of the
 * same files in a checkout.
 */
import { rmSync } from "node:fs";
import { createBenchDatabase } from "../lib/database.js";
import { SERVICE } from "../lib/fixtures.js";
import { checkout, git, openSession, peakRss, timed, writeAll, writeTree, type FileWrite } from "../lib/landing.js";
import { makeGitRepo, tsModule4KiB } from "../lib/repos.js";
import { RpcClient } from "../lib/rpc.js";
import { round, type Scenario } from "../lib/scenario.js";
import { startBerth } from "../lib/servers.js";
import { CommitChangesetRequestSchema, CommitChangesetResponseSchema, RegisterRepositoryRequestSchema, RegisterRepositoryResponseSchema } from "../../gen/berth/v1/workspace_service_pb.js";

const FILES = Number(process.env.BENCH_LANDING_MEMORY_FILES ?? 10_000);
const RSS_FACTOR = 2;

export const scenario: Scenario = {
  name: "landing-memory",
  title: `CommitChangeset of ${FILES.toLocaleString("en-US")} new 4 KiB files: completes, server RSS growth vs the changed bytes`,
  async run(ctx) {
    const source = makeGitRepo(1_000, "berth-bench-landing-memory-");
    const db = await createBenchDatabase();
    const berth = await startBerth({ databaseUrl: db.url, cpuProfDir: ctx.cpuProfDir });
    let co: string | undefined;
    try {
      const c = new RpcClient(berth.grpcUrl);
      const repoId = (await c.unary(`${SERVICE}/RegisterRepository`, RegisterRepositoryRequestSchema, RegisterRepositoryResponseSchema, { name: `bench-landing-memory-${Date.now()}`, sourcePath: source })).repository!.id;
      const enc = new TextEncoder();
      const files: FileWrite[] = Array.from({ length: FILES }, (_, i) => ({ path: `gen/part${i % 50}/module${i}.ts`, content: enc.encode(`// generated ${i}\n${tsModule4KiB(i % 12, i)}`), over: null }));
      const changedBytes = files.reduce((n, f) => n + f.content.byteLength, 0);
      const s = await openSession(c, repoId, "bench-big-lander");
      const [, writeMs] = await timed(() => writeAll(c, s.sessionId, files));
      ctx.log(`${FILES} files (${(changedBytes / 2 ** 20).toFixed(1)} MiB) written in ${Math.round(writeMs)} ms; server RSS ${Math.round(berth.rssKiB() / 1024)} MiB`);
      const { result: [cm, commitMs], beforeKiB, peakKiB } = await peakRss(berth.rssKiB, () =>
        timed(() => c.unary(`${SERVICE}/CommitChangeset`, CommitChangesetRequestSchema, CommitChangesetResponseSchema, { changesetId: s.changesetId, message: "ten thousand files" }, 900_000)),
      );
      if (cm.paths !== FILES) throw new Error(`CommitChangeset committed ${cm.paths} paths, not ${FILES}`);
      c.close();
      co = checkout(source);
      writeTree(co, files);
      const [, gitMs] = await timed(() => {
        git(co!, ["add", "-A"]);
        git(co!, ["commit", "-q", "-m", "ten thousand files"]);
      });
      const growthBytes = (peakKiB - beforeKiB) * 1024;
      const factor = growthBytes / changedBytes;
      ctx.log(`CommitChangeset ${Math.round(commitMs)} ms (git add + commit ${Math.round(gitMs)} ms); RSS ${Math.round(beforeKiB / 1024)} → peak ${Math.round(peakKiB / 1024)} MiB (growth ${round(factor, 2)}× the changed bytes)`);
      return {
        rows: [
          {
            figure: `CommitChangeset of ${FILES.toLocaleString("en-US")} new files (${(changedBytes / 2 ** 20).toFixed(1)} MiB): server RSS growth (peak during the call − before), sampled every 5 ms`,
            value: round((peakKiB - beforeKiB) / 1024, 1),
            unit: "MiB",
            baseline: { name: "the changed bytes", value: round(changedBytes / 2 ** 20, 1), unit: "MiB" },
            ratio: round(factor, 2),
            target: `completes; growth < ${RSS_FACTOR}× the changed bytes`,
            met: factor < RSS_FACTOR,
            note: `RSS before ${Math.round(beforeKiB / 1024)} MiB, peak ${Math.round(peakKiB / 1024)} MiB`,
          },
          {
            figure: `CommitChangeset of ${FILES.toLocaleString("en-US")} new files: time`,
            value: round(commitMs, 1),
            unit: "ms",
            baseline: { name: "`git add -A && git commit` of the same files in a checkout", value: round(gitMs, 1), unit: "ms" },
            ratio: round(commitMs / gitMs, 2),
          },
        ],
        commands: [berth.command, `fixture: git repository ${source} (1,000 files); one persistent session writes ${FILES} new files under gen/ (WriteFile, 16 in flight, not timed); git baseline in a \`git clone --shared\` checkout`],
        runs: {},
        extra: { beforeKiB, peakKiB, changedBytes, commitMs, gitMs, writeMs },
      };
    } finally {
      await berth.stop();
      await db.drop();
      rmSync(source, { recursive: true, force: true });
      if (co) rmSync(co, { recursive: true, force: true });
    }
  },
};
