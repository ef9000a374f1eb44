/**
 * The README's tour with the berth command, run as pasted (./readme-tour.ts runTour): its lines
 * one after another with sh against a real server and a real git repository, the variables
 * they set kept, `… &` left running; and what each line prints must be what the README shows
 * under it (./readme-tour.ts says what the README may shorten).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBerth, type TestBerth } from "../support/berth.js";
import { BIN, ROOT } from "../cli/helpers.js";
import { run } from "./helpers.js";
import { readmeSteps, runTour, tourEnv } from "./readme-tour.js";

describe("the README's berth command tour", () => {
  let berth: TestBerth;
  let tmp: string;
  beforeAll(async () => {
    berth = await startBerth({ env: { BERTH_ENV_ROOT: mkdtempSync(path.join(tmpdir(), "berth-tour-envs-")) } });
    tmp = mkdtempSync(path.join(tmpdir(), "berth-tour-"));
  });
  afterAll(async () => {
    await berth?.close();
  });

  it("runs every line as pasted, each printing what the README shows: two agents, files, claims, a turn, strand and resume while held, the merged commit; then berth run around an agent", { timeout: 240_000 }, async () => {
    const env = tourEnv(berth.server.httpUrl);
    const steps = readmeSteps(ROOT, "## The tour with the berth command");
    expect(steps.some((s) => s.command.endsWith(" &"))).toBe(true);
    expect(steps.filter((s) => /^[A-Z0-9]+=\$\(/.test(s.command)).length).toBeGreaterThanOrEqual(4);

    // The README's /tmp/berth-… paths are in a fresh directory here, and `npx berth` is this checkout's command.
    const { problems, background, printed } = await runTour(steps, {
      env,
      toLocal: (line) => line.replaceAll("/tmp/berth-", `${tmp}/berth-`).replaceAll("npx berth", `${process.execPath} ${BIN}`),
      toReadme: (text) => text.replaceAll(`${tmp}/berth-`, "/tmp/berth-"),
    });
    expect(problems, `what the README shows differs from what was printed:\n${problems.join("\n")}`).toEqual([]);

    // The heartbeat held the ephemeral session until it was stranded under it (and, by its next beat, resumed), then said so and exited 1.
    expect(await background[0]!.exited).toBe(1);
    expect(background[0]!.lines.slice(1).join("\n")).toMatch(/is no longer active|SESSION_STRANDED|SESSION_RESUMED/);
    expect(printed[printed.length - 1]).toMatch(/^[0-9a-f]+ Say hello\n/);
    // main is checked out in the tour's repository: the merge brought its work tree along.
    const dir = path.join(tmp, "berth-tour");
    const status = await run("git", ["-C", dir, "status", "--porcelain"], { env });
    expect(status.stdout).toBe("");
    expect(readFileSync(path.join(dir, "hello.txt"), "utf8")).toBe("hello\n");

    // Then "Use it with your agent": berth run around a scripted some-agent (outside /tmp, which the sandbox replaces).
    const bin = mkdtempSync("/var/tmp/berth-tour-agent-");
    writeFileSync(path.join(bin, "some-agent"), '#!/bin/sh\nmkdir -p src && printf \'import { test } from "vitest";\\ntest("is no longer flaky", () => {});\\n// %s\\n\' "$2" > src/flaky.test.ts\n', { mode: 0o755 });
    try {
      const agent = await runTour(readmeSteps(ROOT, "## Use it with your agent"), {
        env: { ...env, PATH: `${bin}:${env.PATH ?? ""}` },
        toLocal: (line) => line.replaceAll("npx berth", `${process.execPath} ${BIN}`),
        toReadme: (text) => text,
      });
      expect(agent.problems, `what the README shows differs from what was printed:\n${agent.problems.join("\n")}`).toEqual([]);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });
});
