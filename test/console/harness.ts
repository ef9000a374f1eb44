/**
 * What the console's Chromium tests share: a real server with token auth (an admin, agents, a
 * non-member), a browser, gRPC clients per token, and the waits and screenshots of docs/console.md.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Locator, Page } from "playwright-core";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { startBerth, type TestBerth } from "../support/berth.js";
import { createGrpcClient, type GrpcClient } from "../support/grpc-client.js";
import { launchBrowser, type ConsoleBrowser } from "./browser.js";

/** Generous: the machine may be loaded; each wait ends as soon as the page shows the change. */
export const WAIT = { timeout: 20_000, interval: 50 };
export const text = (l: Locator) => l.count().then((n) => (n > 0 ? l.first().textContent() : null));
export const attr = (l: Locator, name: string) => l.count().then((n) => (n > 0 ? l.first().getAttribute(name) : null));
export const shown = (l: Locator) => l.first().waitFor({ state: "visible", timeout: WAIT.timeout });

const SHOTS = process.env.BERTH_SCREENSHOTS === "1" ? path.resolve("docs/console") : undefined;

/** Writes docs/console/<name>.png when BERTH_SCREENSHOTS=1. */
export async function shot(page: Page, name: string, fullPage = false): Promise<void> {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage });
}

export interface ConsoleHarness<W extends string> {
  readonly berth: TestBerth;
  readonly browser: ConsoleBrowser;
  readonly tokens: Readonly<Record<W, string>>;
  /** A WorkspaceService client with `who`'s token. */
  as(who: W): GrpcClient<typeof WorkspaceService>;
  close(): Promise<void>;
}

/**
 * Starts a server whose tokens are `who` → { roles, repos } (repos default to every repository),
 * and a browser.
 */
export async function startConsole<W extends string>(who: Record<W, { roles?: string[]; repos?: string[] }>, env: Record<string, string> = {}): Promise<ConsoleHarness<W>> {
  const dir = mkdtempSync(path.join(tmpdir(), "berth-console-"));
  const file = path.join(dir, "tokens.json");
  const tokens = Object.fromEntries(Object.keys(who).map((w) => [w, randomBytes(16).toString("hex")])) as Record<W, string>;
  const sha = (t: string) => createHash("sha256").update(t).digest("hex");
  writeFileSync(file, JSON.stringify({
    tokens: (Object.entries(who) as [W, { roles?: string[]; repos?: string[] }][]).map(([w, spec]) => ({ sha256: sha(tokens[w]), agent_id: w, ...(spec.roles ? { roles: spec.roles } : {}), repos: spec.repos ?? ["*"] })),
  }));
  const berth = await startBerth({ env: { BERTH_AUTH: "token", BERTH_AUTH_TOKENS_FILE: file, BERTH_ENV_ROOT: path.join(dir, "envs"), ...env } });
  const browser = await launchBrowser();
  const clients: { close(): void }[] = [];
  return {
    berth,
    browser,
    tokens,
    as(w) {
      const c = createGrpcClient(WorkspaceService, berth.server.grpcAddress, { metadata: { authorization: `Bearer ${tokens[w]}` } });
      clients.push(c);
      return c;
    },
    async close() {
      for (const c of clients) c.close();
      await browser.close();
      await berth.close();
    },
  };
}
