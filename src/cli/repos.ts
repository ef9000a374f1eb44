/** berth repos add|ls|set|check — RegisterRepository, ListRepositories, UpdateRepository, SetRepositoryCheck. */
import { InvalidArgumentError, type Command } from "commander";
import { ListRepositoriesResponseSchema, RegisterRepositoryResponseSchema, SetRepositoryCheckResponseSchema, UpdateRepositoryResponseSchema } from "@berth/client";
import { create } from "@bufbuild/protobuf";
import { allRepositories, cliFor, resolveRepoIds } from "./client.js";
import { formatTime, jsonLine, keyValues, print, table, UsageError } from "./output.js";

export function registerRepos(program: Command): void {
  const repos = program.command("repos").description("repositories agents work on");

  repos
    .command("add")
    .description("register a repository (RegisterRepository)")
    .argument("<name>", "unique name, 1–200 characters")
    .option("--source <path>", "absolute path of a git repository on the server's disk (admin role when auth is on)")
    .option("--remote <url>", "URL of the repository on a git server (file://, git://, ssh://, http(s)://; no credentials in it), instead of --source (admin role when auth is on)")
    .option("--capture-exclude <pattern...>", "what a turn's capture leaves out besides .gitignore (gitignore syntax, from the repository root)")
    .option("--independent-review <bool>", "true (the default) or false: APPROVED and MERGED only from a principal other than the changeset's authors")
    .option("-q, --quiet", "print only the repository's id (R=$(berth repos add … -q))")
    .action(async (name: string, opts: { source?: string; remote?: string; captureExclude?: string[]; independentReview?: string; quiet?: boolean }, command: Command) => {
      const cli = cliFor(command);
      const independentReview = opts.independentReview === undefined ? undefined : bool(cli, "--independent-review", opts.independentReview);
      const res = await cli.call("registering", () =>
        cli.workspaces.registerRepository({ name, sourcePath: opts.source ?? "", remoteUrl: opts.remote ?? "", captureExclude: opts.captureExclude ?? [], ...(independentReview !== undefined ? { independentReview } : {}) }),
      );
      if (opts.quiet) return print(res.repository!.id);
      if (cli.json) return print(jsonLine(RegisterRepositoryResponseSchema, res));
      const r = res.repository!;
      const rows: [string, string][] = [["id", r.id], ["name", r.name], r.remoteUrl ? ["remote", r.remoteUrl] : ["source", r.sourcePath], ["created", formatTime(r.createdAt)]];
      if (r.captureExclude.length > 0) rows.push(["capture exclude", r.captureExclude.join(" ")]);
      rows.push(["independent review", String(r.independentReview)]);
      print(keyValues(rows));
    });

  repos
    .command("set")
    .description("change a repository's settings (UpdateRepository; admin role when auth is on)")
    .argument("<repo>", "the repository: its name or id")
    .option("--independent-review <bool>", "true or false: APPROVED and MERGED only from a principal other than the changeset's authors (a reviewer or an admin)")
    .action(async (ref: string, opts: { independentReview?: string }, command: Command) => {
      const cli = cliFor(command);
      if (opts.independentReview === undefined) throw cli.fail(new UsageError("nothing to set: give --independent-review=true|false"));
      const independentReview = bool(cli, "--independent-review", opts.independentReview);
      const [repositoryId] = await resolveRepoIds(cli, [ref]);
      const res = await cli.call("updating the repository", () => cli.workspaces.updateRepository({ repositoryId: repositoryId!, independentReview }));
      if (cli.json) return print(jsonLine(UpdateRepositoryResponseSchema, res));
      const r = res.repository!;
      print(keyValues([["id", r.id], ["name", r.name], ["independent review", String(r.independentReview)]]));
    });

  repos
    .command("ls")
    .description("list repositories (ListRepositories)")
    .action(async (_opts: unknown, command: Command) => {
      const cli = cliFor(command);
      const repositories = await allRepositories(cli);
      if (cli.json) return print(jsonLine(ListRepositoriesResponseSchema, create(ListRepositoriesResponseSchema, { repositories })));
      if (repositories.length === 0) return print("no repositories (berth repos add <name> registers one)");
      print(table(["ID", "NAME", "SOURCE", "REVIEW", "CREATED"], repositories.map((r) => [r.id, r.name, r.sourcePath || r.remoteUrl || "-", r.independentReview ? "independent" : "-", formatTime(r.createdAt)])));
    });

  repos
    .command("check")
    .description("set the command run on a changeset's tree when it moves to VERIFYING (SetRepositoryCheck; admin role): exit 0 approves it, anything else sends it back to SUBMITTED")
    .argument("<repo>", "the repository, by name or id")
    .argument("[argv...]", "the command and its arguments, after -- (no shell: -- sh -c '…' for one)")
    .option("--timeout <seconds>", "how long it may run (default 600, at most 86400)", (v: string) => {
      if (!/^\d+$/.test(v)) throw new InvalidArgumentError("expected a number of seconds");
      return Number(v);
    })
    .option("--clear", "remove the repository's check (VERIFYING is a state only again)")
    .action(async (ref: string, argv: string[], opts: { timeout?: number; clear?: boolean }, command: Command) => {
      const cli = cliFor(command);
      if (opts.clear && argv.length > 0) throw cli.fail(new UsageError("--clear takes no command"));
      if (!opts.clear && argv.length === 0) throw cli.fail(new UsageError("give the check's command after -- (or --clear to remove it)"));
      const [repositoryId] = await resolveRepoIds(cli, [ref]);
      const res = await cli.call("setting the check", () =>
        cli.workspaces.setRepositoryCheck({ repositoryId: repositoryId!, ...(opts.clear ? {} : { check: { argv, timeoutSeconds: opts.timeout ?? 0 } }) }),
      );
      if (cli.json) return print(jsonLine(SetRepositoryCheckResponseSchema, res));
      const r = res.repository!;
      print(keyValues([["repository", r.name], ["check", r.check ? r.check.argv.map(quoted).join(" ") : "none"], ...(r.check ? [["timeout", `${r.check.timeoutSeconds}s`] as [string, string]] : [])]));
    });
}

/** An argument as a shell would need it written. */
function quoted(a: string): string {
  return /^[A-Za-z0-9._/:=@+-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`;
}

function bool(cli: ReturnType<typeof cliFor>, flag: string, value: string): boolean {
  if (value === "true") return true;
  if (value === "false") return false;
  throw cli.fail(new UsageError(`${flag} takes true or false, got ${JSON.stringify(value)}`));
}
