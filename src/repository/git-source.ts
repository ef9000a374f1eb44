/** The repository's source on the server's disk, read with the git command. */
import path from "node:path";
import { BerthError, invalidArgument } from "../platform/errors.js";
import { execGit } from "../platform/git.js";

async function git(cwd: string, args: string[]): Promise<string> {
  return (await execGit(cwd, args, { timeoutMs: 10_000, maxBuffer: 1 << 20 })).toString("utf8").trim();
}

/** Returns the repository's top-level directory; INVALID_ARGUMENT when `p` is not a git repository. */
export async function checkGitRepository(p: string): Promise<string> {
  if (!path.isAbsolute(p)) {
    throw invalidArgument([{ field: "source_path", reason: "NOT_ABSOLUTE", description: "must be an absolute path on the server" }]);
  }
  try {
    // A bare repository has no top level; its git dir is the source.
    const bare = await git(p, ["rev-parse", "--is-bare-repository"]);
    return bare === "true" ? path.resolve(p, await git(p, ["rev-parse", "--git-dir"])) : await git(p, ["rev-parse", "--show-toplevel"]);
  } catch {
    throw invalidArgument([{ field: "source_path", reason: "NOT_A_GIT_REPOSITORY", description: `${p} is not a git repository readable by the server` }]);
  }
}

/** Resolves a commit-ish to a full object name; INVALID_ARGUMENT on base_commit when it does not name a commit. */
export async function resolveCommit(repoPath: string, commitish: string, field = "base_commit"): Promise<string> {
  if (commitish.startsWith("-")) {
    throw invalidArgument([{ field, reason: "UNKNOWN_COMMIT", description: "must name a commit" }]);
  }
  try {
    return await git(repoPath, ["rev-parse", "--verify", "--quiet", `${commitish}^{commit}`]);
  } catch (err) {
    if ((err as { code?: unknown }).code === 1) {
      throw invalidArgument([{ field, reason: "UNKNOWN_COMMIT", description: `${commitish} is not a commit of the repository` }]);
    }
    throw new BerthError("unavailable", "SOURCE_UNREADABLE", "the repository's source could not be read", { source_path: repoPath });
  }
}
