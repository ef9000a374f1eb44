/**
 * Landing at git's speed (issue 30): a changeset of 1,000 written files (4 KiB TypeScript
 * modules over a 1,000-file repository, on PostgreSQL) through CommitChangeset, MERGED,
 * DiffWorkspace and RebaseWorkspace, each side by side with git doing the same work in a
 * checkout of the same repository, in the same round (alternating which goes first):
 *
 * - CommitChangeset vs `git add -A && git commit` of the same files;
 * - MERGED (the commit built again, then the fast-forward of main) vs the same git baseline;
 * - DiffWorkspace vs `git diff` of the same files in the checkout (working tree against index);
 * - RebaseWorkspace onto a commit that changed every one of the files elsewhere (1,000 clean
 *   three-way merges) vs `git rebase` of a commit of the same files onto it (report only).
 *
 * Each round uses a fresh session (a commit of an unchanged overlay is answered without work)
 * and new contents; the set-up writes (WriteFile, 16 in flight) are not timed.
 */
import { rmSync } from "node:fs";
import { createBenchDatabase } from "../lib/database.js";
import { SERVICE } from "../lib/fixtures.js";
import { approve, checkout, commitFiles, destroy, git, openSession, timed, writeAll, writeTree, type FileWrite } from "../lib/landing.js";
import { makeGitRepo, tsModule4KiB } from "../lib/repos.js";
import { RpcClient } from "../lib/rpc.js";
import { median, round, type Scenario } from "../lib/scenario.js";
import { startBerth } from "../lib/servers.js";
import { ChangesetState } from "../../gen/berth/v1/types_pb.js";
import {
  CommitChangesetRequestSchema,
  CommitChangesetResponseSchema,
  DiffWorkspaceRequestSchema,
  DiffWorkspaceResponseSchema,
  RebaseWorkspaceRequestSchema,
  RebaseWorkspaceResponseSchema,
  RegisterRepositoryRequestSchema,
  RegisterRepositoryResponseSchema,
  TransitionChangesetRequestSchema,
  TransitionChangesetResponseSchema,
} from "../../gen/berth/v1/workspace_service_pb.js";

const FILES = Number(process.env.BENCH_LANDING_FILES ?? 1_000);
const COMMIT_RATIO = 3;
const DIFF_RATIO = 2;
const LONG = 600_000;

const enc = new TextEncoder();
/** File i's module: method 0 carries `mine` (a session's change), a last line `upstream` (the base's change): far apart, so they merge cleanly. */
const moduleOf = (i: number, mine: number, upstream: number) => enc.encode(`// module ${i}\n${tsModule4KiB(0, mine)}export const revision = ${upstream};\n`);
const pathOf = (i: number) => `pkg${i % 10}/mod${i % 7}/file${i}.ts`;
/** Every file at (mine, upstream), over its version (mine0, upstream0). */
const filesAt = (mine: number, upstream: number, over: [number, number]): FileWrite[] =>
  Array.from({ length: FILES }, (_, i) => ({ path: pathOf(i), content: moduleOf(i, mine, upstream), over: moduleOf(i, over[0], over[1]) }));

export const scenario: Scenario = {
  name: "landing",
  title: `Landing ${FILES.toLocaleString("en-US")} written files: CommitChangeset, MERGED, DiffWorkspace, RebaseWorkspace vs git in a checkout`,
  async run(ctx) {
    const source = makeGitRepo(0, "berth-bench-landing-");
    // The repository's files are the modules at version (0, 0); HEAD detached, so MERGED into main touches no checkout.
    commitFiles(source, filesAt(0, 0, [0, 0]), "modules");
    git(source, ["checkout", "-q", "--detach"]);
    const db = await createBenchDatabase();
    const berth = await startBerth({ databaseUrl: db.url, cpuProfDir: ctx.cpuProfDir });
    const scratch: string[] = [];
    try {
      const c = new RpcClient(berth.grpcUrl);
      const repoId = (await c.unary(`${SERVICE}/RegisterRepository`, RegisterRepositoryRequestSchema, RegisterRepositoryResponseSchema, { name: `bench-landing-${Date.now()}`, sourcePath: source })).repository!.id;
      const t: Record<"commit" | "merge" | "diff" | "rebase" | "gitCommit" | "gitDiff" | "gitRebase", number[]> = { commit: [], merge: [], diff: [], rebase: [], gitCommit: [], gitDiff: [], gitRebase: [] };
      let mineOnMain = 0;
      // main's files keep upstream 0: the rebase's commits are off main.
      const upstream = 0;
      for (let r = 0; r < ctx.rounds; r++) {
        const mine = 100 + r;
        const files = filesAt(mine, upstream, [mineOnMain, upstream]);
        const co = checkout(source);
        scratch.push(co);
        const berthSide = async () => {
          const s = await openSession(c, repoId, `bench-lander-${r}`);
          await writeAll(c, s.sessionId, files);
          const [d, diffMs] = await timed(() => c.unary(`${SERVICE}/DiffWorkspace`, DiffWorkspaceRequestSchema, DiffWorkspaceResponseSchema, { sessionId: s.sessionId }, LONG));
          if (d.paths.length !== FILES) throw new Error(`DiffWorkspace answered ${d.paths.length} paths, not ${FILES}`);
          const [cm, commitMs] = await timed(() => c.unary(`${SERVICE}/CommitChangeset`, CommitChangesetRequestSchema, CommitChangesetResponseSchema, { changesetId: s.changesetId, message: `bench round ${r}` }, LONG));
          if (cm.paths !== FILES || cm.unchanged) throw new Error(`CommitChangeset: ${cm.paths} paths, unchanged ${cm.unchanged}`);
          await approve(c, s.changesetId);
          const [, mergeMs] = await timed(() => c.unary(`${SERVICE}/TransitionChangeset`, TransitionChangesetRequestSchema, TransitionChangesetResponseSchema, { changesetId: s.changesetId, toState: ChangesetState.MERGED, targetRef: "main" }, LONG));
          t.diff.push(diffMs);
          t.commit.push(commitMs);
          t.merge.push(mergeMs);
          ctx.log(`round ${r}: DiffWorkspace ${Math.round(diffMs)} ms, CommitChangeset ${Math.round(commitMs)} ms, MERGED ${Math.round(mergeMs)} ms`);
        };
        const gitSide = () => {
          writeTree(co, files);
          const [, diffMs] = timedSync(() => git(co, ["diff"]));
          const [, commitMs] = timedSync(() => {
            git(co, ["add", "-A"]);
            git(co, ["commit", "-q", "-m", `bench round ${r}`]);
          });
          t.gitDiff.push(diffMs);
          t.gitCommit.push(commitMs);
          ctx.log(`round ${r}: git diff ${Math.round(diffMs)} ms, git add -A && git commit ${Math.round(commitMs)} ms`);
        };
        if (r % 2 === 0) {
          await berthSide();
          gitSide();
        } else {
          gitSide();
          await berthSide();
        }
        mineOnMain = mine;

        // Rebase: a session's change of every file onto a commit that changed each elsewhere.
        const oldBase = git(source, ["rev-parse", "main"]);
        const mineR = 200 + r;
        const sessionFiles = filesAt(mineR, upstream, [mineOnMain, upstream]);
        git(source, ["checkout", "-q", "--detach", "main"]);
        const onto = commitFiles(source, filesAt(mineOnMain, upstream + 1, [0, 0]), `upstream ${r}`);
        const rebaseBerth = async () => {
          const s = await openSession(c, repoId, `bench-rebaser-${r}`, oldBase);
          await writeAll(c, s.sessionId, sessionFiles);
          const [rb, ms] = await timed(() => c.unary(`${SERVICE}/RebaseWorkspace`, RebaseWorkspaceRequestSchema, RebaseWorkspaceResponseSchema, { sessionId: s.sessionId, onto }, LONG));
          if (rb.merged.length !== FILES || rb.conflicts.length !== 0) throw new Error(`RebaseWorkspace merged ${rb.merged.length}, conflicts ${rb.conflicts.length}`);
          await destroy(c, s.sessionId);
          t.rebase.push(ms);
          ctx.log(`round ${r}: RebaseWorkspace ${Math.round(ms)} ms`);
        };
        const rebaseGit = () => {
          const rco = checkout(source, oldBase);
          scratch.push(rco);
          git(rco, ["checkout", "-q", "-b", "work"]);
          writeTree(rco, sessionFiles);
          git(rco, ["commit", "-q", "-am", "work"]);
          const [, ms] = timedSync(() => git(rco, ["rebase", "-q", onto]));
          t.gitRebase.push(ms);
          ctx.log(`round ${r}: git rebase ${Math.round(ms)} ms`);
        };
        if (r % 2 === 0) {
          await rebaseBerth();
          rebaseGit();
        } else {
          rebaseGit();
          await rebaseBerth();
        }
      }
      c.close();
      const ratio = (a: number[], b: number[]) => median(a.map((x, i) => x / b[i]!));
      const ms = (xs: number[]) => round(median(xs), 1);
      const commitRatio = ratio(t.commit, t.gitCommit);
      const mergeRatio = ratio(t.merge, t.gitCommit);
      const diffRatio = ratio(t.diff, t.gitDiff);
      const per = (xs: number[]) => xs.map((x) => Math.round(x)).join(" / ");
      return {
        rows: [
          {
            figure: `CommitChangeset of ${FILES.toLocaleString("en-US")} written 4 KiB files (PostgreSQL), median`,
            value: ms(t.commit),
            unit: "ms",
            baseline: { name: "`git add -A && git commit` of the same files in a checkout", value: ms(t.gitCommit), unit: "ms" },
            ratio: round(commitRatio, 2),
            target: `ratio ≤ ${COMMIT_RATIO}`,
            met: commitRatio <= COMMIT_RATIO,
            note: `per round ${per(t.commit)} ms vs git ${per(t.gitCommit)} ms`,
          },
          {
            figure: `MERGED of the same changeset (its commit built again under the transition, main fast-forwarded), median`,
            value: ms(t.merge),
            unit: "ms",
            baseline: { name: "`git add -A && git commit` of the same files in a checkout", value: ms(t.gitCommit), unit: "ms" },
            ratio: round(mergeRatio, 2),
            target: `ratio ≤ ${COMMIT_RATIO}`,
            met: mergeRatio <= COMMIT_RATIO,
            note: `per round ${per(t.merge)} ms`,
          },
          {
            figure: `DiffWorkspace of ${FILES.toLocaleString("en-US")} changed files, median`,
            value: ms(t.diff),
            unit: "ms",
            baseline: { name: "`git diff` of the same files in a checkout", value: ms(t.gitDiff), unit: "ms" },
            ratio: round(diffRatio, 2),
            target: `ratio ≤ ${DIFF_RATIO}`,
            met: diffRatio <= DIFF_RATIO,
            note: `per round ${per(t.diff)} ms vs git ${per(t.gitDiff)} ms`,
          },
          {
            figure: `RebaseWorkspace of ${FILES.toLocaleString("en-US")} changed files onto a commit that changed each of them elsewhere (clean three-way merges), median`,
            value: ms(t.rebase),
            unit: "ms",
            baseline: { name: "`git rebase` of a commit of the same files onto it, in a checkout", value: ms(t.gitRebase), unit: "ms" },
            ratio: round(ratio(t.rebase, t.gitRebase), 2),
            note: `per round ${per(t.rebase)} ms vs git ${per(t.gitRebase)} ms`,
          },
        ],
        commands: [
          berth.command,
          `fixture: git repository ${source} (${FILES} 4 KiB TypeScript modules, HEAD detached); per round a persistent session writes all ${FILES} (WriteFile, 16 in flight, not timed); git baselines in \`git clone --shared\` checkouts of it`,
        ],
        runs: {},
        extra: t,
      };
    } finally {
      await berth.stop();
      await db.drop();
      rmSync(source, { recursive: true, force: true });
      for (const d of scratch) rmSync(d, { recursive: true, force: true });
    }
  },
};

function timedSync<T>(fn: () => T): [T, number] {
  const t = performance.now();
  const r = fn();
  return [r, performance.now() - t];
}
