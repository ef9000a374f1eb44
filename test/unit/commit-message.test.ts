/** defaultCommitMessage (src/overlay/commit-message.ts): what a changeset's commit says when it is given no message. */
import { describe, expect, it } from "vitest";
import { COMMIT_MESSAGE_MAX_BYTES, defaultCommitMessage } from "../../src/overlay/commit-message.js";

describe("the default commit message", () => {
  it("puts the intents first, then the agents' messages, in order, blank-line separated", () => {
    expect(defaultCommitMessage("cs", ["Fix the parser"], ["parser: read the header", "fix parser\n\nThe header may be empty."])).toBe(
      "Fix the parser\n\nparser: read the header\n\nfix parser\n\nThe header may be empty.",
    );
  });

  it("says each thing once: a repeated intent, a message kept by two turns, a message equal to an intent", () => {
    expect(defaultCommitMessage("cs", ["Fix it", " Fix it "], ["one", "Fix it", "two", "one\n"])).toBe("Fix it\n\none\n\ntwo");
  });

  it("names the changeset when there is nothing to say", () => {
    expect(defaultCommitMessage("c9f0", ["", "  "], [""])).toBe("Berth changeset c9f0");
  });

  it("stays within the message limit, saying how many messages were left out", () => {
    const big = "m".repeat(30_000);
    const message = defaultCommitMessage("cs", ["Intent"], [`a${big}`, `b${big}`, `c${big}`, `d${big}`]);
    expect(Buffer.byteLength(message)).toBeLessThanOrEqual(COMMIT_MESSAGE_MAX_BYTES);
    expect(message.startsWith(`Intent\n\na${big}\n\nb${big}\n\n`)).toBe(true);
    expect(message.endsWith("[2 more message(s) of the agents' commits left out: over 65536 bytes]")).toBe(true);
  });
});
