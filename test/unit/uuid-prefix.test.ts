/** uuidPrefixBounds: the range of UUIDs a prefix names (ResolveIdPrefix's index range). */
import { describe, expect, it } from "vitest";
import { uuidPrefixBounds } from "../../src/platform/uuid.js";

describe("uuidPrefixBounds", () => {
  it("pads the prefix with 0s and fs, keeping the dashes where a UUID has them", () => {
    expect(uuidPrefixBounds("5e2b")).toEqual({ lowest: "5e2b0000-0000-0000-0000-000000000000", highest: "5e2bffff-ffff-ffff-ffff-ffffffffffff" });
    expect(uuidPrefixBounds("5E2B1C9A-4F")).toEqual({ lowest: "5e2b1c9a-4f00-0000-0000-000000000000", highest: "5e2b1c9a-4fff-ffff-ffff-ffffffffffff" });
    expect(uuidPrefixBounds("5e2b1c9a-")).toEqual({ lowest: "5e2b1c9a-0000-0000-0000-000000000000", highest: "5e2b1c9a-ffff-ffff-ffff-ffffffffffff" });
    const whole = "5e2b1c9a-4f00-4000-8000-0123456789ab";
    expect(uuidPrefixBounds(whole)).toEqual({ lowest: whole, highest: whole });
  });

  it("names no range for what no UUID starts with", () => {
    for (const p of ["", "5e2g", "5e2b1c9a4", "5e2b-", "5e2b1c9a-4f00-4000-8000-0123456789abc", " 5e2b"]) expect(uuidPrefixBounds(p), p).toBeUndefined();
  });
});
