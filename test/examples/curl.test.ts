/**
 * The README's curl tour, run as pasted (./readme-tour.ts runTour) with the system's curl
 * against a real server: the "A one-minute tour" block (a repository, a workspace, a JSON error
 * with details) and its landing block (a commit merged into a real repository's main), each line
 * printing what the README shows under it. Proves Connect's JSON form works with nothing but curl.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBerth, type TestBerth } from "../support/berth.js";
import { REQUIRE_SERVICES } from "../support/services.js";
import { succeeds } from "./helpers.js";
import { BIN, ROOT } from "../cli/helpers.js";
import { readmeSteps, runTour, tourEnv, type Step, type TourResult } from "./readme-tour.js";

const haveCurl = succeeds("curl", ["--version"]);
if (!haveCurl) {
  if (REQUIRE_SERVICES) throw new Error("curl is missing, and BERTH_REQUIRE_SERVICES=1 forbids skipping");
  console.warn("\n*** SKIPPED: curl is missing; the README's curl tour is not tested ***\n");
}

const TOUR = "## A one-minute tour";

describe.skipIf(!haveCurl)("the README's curl tour", () => {
  let berth: TestBerth;
  beforeAll(async () => {
    berth = await startBerth();
  });
  afterAll(async () => {
    await berth?.close();
  });

  /** The steps as pasted: the README's server and /tmp/berth-… paths are this test's. */
  function tour(steps: readonly Step[], tmp: string): Promise<TourResult> {
    const env = tourEnv(berth.server.httpUrl);
    return runTour(steps, {
      env,
      toLocal: (line) =>
        line.replaceAll("http://127.0.0.1:8080", berth.server.httpUrl).replaceAll("/tmp/berth-", `${tmp}/berth-`).replaceAll("npx berth", `${process.execPath} ${BIN}`),
      toReadme: (text) => text.replaceAll(`${tmp}/berth-`, "/tmp/berth-"),
    });
  }

  it("registers a repository, creates a workspace and shows a JSON error with details, each line printing what the README shows", async () => {
    const steps = readmeSteps(ROOT, TOUR, 0);
    expect(steps.map((s) => s.command.split(" ")[0])).toEqual(["curl", "REPO=$(node", "curl", "curl"]);
    const { problems, printed } = await tour(steps, mkdtempSync(path.join(tmpdir(), "berth-curl-")));
    expect(problems, `what the README shows differs from what was printed:\n${problems.join("\n")}`).toEqual([]);
    expect(printed[3]).toMatch(/\nHTTP 400\n$/);
  });

  it("ends with the change landed as a commit on main, as git log shows, each line printing what the README shows", { timeout: 120_000 }, async () => {
    const tmp = mkdtempSync(path.join(tmpdir(), "berth-curl-"));
    const steps = readmeSteps(ROOT, TOUR, 2);
    expect(steps.some((s) => s.command.startsWith("npx berth merge"))).toBe(true);
    const { problems, printed } = await tour(steps, tmp);
    expect(problems, `what the README shows differs from what was printed:\n${problems.join("\n")}`).toEqual([]);
    expect(printed[printed.length - 1]).toMatch(/^[0-9a-f]+ \(HEAD -> main, berth\/[0-9a-f-]{36}\) Say hello\n/);
    expect(readFileSync(path.join(tmp, "berth-demo", "hello.txt"), "utf8")).toBe("hello\n");
  });
});
