/**
 * Headless Chromium for the console tests: Debian's chromium driven by playwright-core (no browser
 * download). launch() gives each browser a fresh temporary profile (its own --user-data-dir,
 * deleted at close): no state survives from one run to the next.
 */
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { CHROMIUM } from "../support/services.js";

export interface ConsoleBrowser {
  readonly browser: Browser;
  /** A new tab in a context of its own (its own sessionStorage, so its own token). */
  open(url: string, token?: string): Promise<Page>;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<ConsoleBrowser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  const contexts: BrowserContext[] = [];
  return {
    browser,
    async open(url, token) {
      const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
      contexts.push(context);
      const page = await context.newPage();
      await page.goto(url);
      if (token !== undefined) {
        await page.getByLabel("bearer token").fill(token);
        await page.getByRole("button", { name: "Use token" }).click();
      }
      return page;
    },
    async close() {
      for (const c of contexts) await c.close().catch(() => undefined);
      await browser.close();
    },
  };
}
