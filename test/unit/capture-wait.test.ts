import { describe, expect, it } from "vitest";
import { captureWaitMs } from "../../src/turns/scheduler.js";

describe("how long ResumeSession waits for a stranded turn's capture", () => {
  const now = 1_000_000;
  it("waits 10 s when the caller set no deadline, or a far one", () => {
    expect(captureWaitMs(undefined, now)).toBe(10_000);
    expect(captureWaitMs(now + 60_000, now)).toBe(10_000);
  });
  it("keeps 1 s of a longer deadline, and a quarter of a short one, for the resume itself", () => {
    expect(captureWaitMs(now + 5_000, now)).toBe(4_000);
    expect(captureWaitMs(now + 3_000, now)).toBe(2_250);
  });
  it("does not wait once the deadline is near or past", () => {
    expect(captureWaitMs(now, now)).toBe(0);
    expect(captureWaitMs(now - 500, now)).toBe(0);
  });
});
