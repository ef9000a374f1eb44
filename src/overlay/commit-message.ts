/**
 * The default message of a changeset's commit, when CommitChangeset (or the commit MERGED makes)
 * is given none (docs/landing-work.md, "The commit message"): the intents of the sessions whose
 * overlay it holds, then the messages of the commits their agents made in their environments
 * (kept by EndTurn with each turn), in turn order. Each said once (a message equal to an intent,
 * or kept by two turns, appears once), blank-line separated, at most COMMIT_MESSAGE_MAX_BYTES:
 * what does not fit is replaced by a note saying how many were left out. An explicit message is
 * used as it is (landing.ts): this module is only asked when there is none.
 */

/** As large as an explicit message may be (api/validate.ts LIMITS.commitMessage). */
export const COMMIT_MESSAGE_MAX_BYTES = 65_536;

export function defaultCommitMessage(changesetId: string, intents: readonly string[], agentMessages: readonly string[]): string {
  const said = [...new Set([...intents, ...agentMessages].map((m) => m.trim()).filter((m) => m !== ""))];
  if (said.length === 0) return `Berth changeset ${changesetId}`;
  const parts: string[] = [];
  let bytes = 0;
  for (const [i, m] of said.entries()) {
    const size = Buffer.byteLength(m) + 2;
    // Room is kept for the note; the first part (an intent, or the first message) is always there.
    if (parts.length > 0 && bytes + size > COMMIT_MESSAGE_MAX_BYTES - 100) {
      parts.push(`[${said.length - i} more message(s) of the agents' commits left out: over ${COMMIT_MESSAGE_MAX_BYTES} bytes]`);
      break;
    }
    parts.push(m);
    bytes += size;
  }
  return parts.join("\n\n");
}
