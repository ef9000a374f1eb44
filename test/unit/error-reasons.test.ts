import { describe, expect, it } from "vitest";
import { REASON_ROWS } from "../../src/platform/error-reasons.js";

describe("the list of error reasons", () => {
  it("names each reason once, each row with when it is given", () => {
    const all = REASON_ROWS.flatMap((r) => [...r.reasons]);
    expect(all.filter((r, i) => all.indexOf(r) !== i)).toEqual([]);
    for (const r of REASON_ROWS) expect(r.when.length).toBeGreaterThan(10);
    for (const r of all) expect(r).toMatch(/^[A-Z][A-Z_]*$/);
  });
});
