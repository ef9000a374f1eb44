/** berth repos add|ls — RegisterRepository, ListRepositories. */
import type { Command } from "commander";
import { ListRepositoriesResponseSchema, RegisterRepositoryResponseSchema } from "@berth/client";
import { create } from "@bufbuild/protobuf";
import { allRepositories, cliFor } from "./client.js";
import { formatTime, jsonLine, keyValues, print, table } from "./output.js";

export function registerRepos(program: Command): void {
  const repos = program.command("repos").description("repositories agents work on");

  repos
    .command("add")
    .description("register a repository (RegisterRepository)")
    .argument("<name>", "unique name, 1–200 characters")
    .option("--source <path>", "absolute path of a git repository on the server's disk (admin role when auth is on)")
    .option("--remote <url>", "URL of the repository on a git server (file://, git://, ssh://, http(s)://; no credentials in it), instead of --source (admin role when auth is on)")
    .option("--capture-exclude <pattern...>", "what a turn's capture leaves out besides .gitignore (gitignore syntax, from the repository root)")
    .option("-q, --quiet", "print only the repository's id (R=$(berth repos add … -q))")
    .action(async (name: string, opts: { source?: string; remote?: string; captureExclude?: string[]; quiet?: boolean }, command: Command) => {
      const cli = cliFor(command);
      const res = await cli.call("registering", () =>
        cli.workspaces.registerRepository({ name, sourcePath: opts.source ?? "", remoteUrl: opts.remote ?? "", captureExclude: opts.captureExclude ?? [] }),
      );
      if (opts.quiet) return print(res.repository!.id);
      if (cli.json) return print(jsonLine(RegisterRepositoryResponseSchema, res));
      const r = res.repository!;
      const rows: [string, string][] = [["id", r.id], ["name", r.name], r.remoteUrl ? ["remote", r.remoteUrl] : ["source", r.sourcePath], ["created", formatTime(r.createdAt)]];
      if (r.captureExclude.length > 0) rows.push(["capture exclude", r.captureExclude.join(" ")]);
      print(keyValues(rows));
    });

  repos
    .command("ls")
    .description("list repositories (ListRepositories)")
    .action(async (_opts: unknown, command: Command) => {
      const cli = cliFor(command);
      const repositories = await allRepositories(cli);
      if (cli.json) return print(jsonLine(ListRepositoriesResponseSchema, create(ListRepositoriesResponseSchema, { repositories })));
      if (repositories.length === 0) return print("no repositories (berth repos add <name> registers one)");
      print(table(["ID", "NAME", "SOURCE", "CREATED"], repositories.map((r) => [r.id, r.name, r.sourcePath || r.remoteUrl || "-", formatTime(r.createdAt)])));
    });
}
