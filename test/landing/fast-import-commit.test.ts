/**
 * The commit landing builds with one fast-import (issue 30) is byte for byte the commit
 * `git commit-tree` made before it for the same tree, message and identities: identities cut
 * as git cuts them, the same message bytes. A crash-retried MERGED on a newer server finds the
 * commit an older one wrote. Real git, real repositories; no server needed.
 */
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { writeCommit, type Identity } from "../../src/overlay/landing-git.js";
import { gitRepo } from "./helpers.js";

const at = 1_700_000_000;

/** What `git commit-tree` writes for `tree` on `parent` with these identities and message. */
function commitTree(dir: string, tree: string, parent: string, message: string, author: Identity, committer: Identity): string {
  return execFileSync("git", ["-C", dir, "commit-tree", tree, "-p", parent, "-F", "-"], {
    input: message,
    encoding: "utf8",
    env: {
      ...process.env,
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_AUTHOR_NAME: author.name,
      GIT_AUTHOR_EMAIL: author.email,
      GIT_AUTHOR_DATE: `@${author.at} +0000`,
      GIT_COMMITTER_NAME: committer.name,
      GIT_COMMITTER_EMAIL: committer.email,
      GIT_COMMITTER_DATE: `@${committer.at} +0000`,
    },
  }).trim();
}

describe("a landing commit", () => {
  const cases: [string, Identity, string][] = [
    ["a plain identity", { name: "Ada Lovelace", email: "ada@example.com", at }, "Land it\n"],
    ["crud around the name and e-mail", { name: ` "Ada, Lovelace"; `, email: " 'ada@example.com'. ", at }, "Trim\n"],
    ["inner quotes, dots and UTF-8 kept", { name: "Zoë O'Brien Jr.", email: "zoë.o'brien@example.com", at }, "Ünïcode message\n\nwith a body\n"],
    ["crud inside a name kept, only its ends cut", { name: "'A. B'.", email: "a.b@example.com", at }, "Inner crud\n"],
    ["an empty e-mail", { name: "agent-7", email: "", at }, "No e-mail\n"],
  ];
  for (const [what, author, message] of cases) {
    it(`is the commit git commit-tree writes: ${what}`, async () => {
      const repo = gitRepo();
      const committer: Identity = { name: "Berth", email: "berth@berth.invalid", at };
      const r = await writeCommit(repo.dir, repo.base, [{ path: "src/app.ts", content: new TextEncoder().encode("export const answer = 42;\n") }, { path: "src/old.ts", content: null }], message, author, committer);
      expect(r.commit).toBe(commitTree(repo.dir, r.tree, repo.base, message, author, committer));
      expect(repo.git("rev-parse", `${r.commit}^{tree}`)).toBe(r.tree);
    });
  }
});
