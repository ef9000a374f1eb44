/** berth workspace create|show|destroy — an agent opening and closing its workspace. */
import { InvalidArgumentError, type Command } from "commander";
import { CreateWorkspaceResponseSchema, DestroyWorkspaceResponseSchema, WorkspaceMode } from "@berth/client";
import { cliFor, resolveRepoIds } from "./client.js";
import { jsonLine, print } from "./output.js";
import { addShowCommand, workspaceBlock } from "./sessions.js";
import { missingOption, usageRule } from "./usage.js";
import { idArgument, idOption } from "./ids.js";

function parseMode(raw: string): WorkspaceMode {
  switch (raw.trim().toLowerCase().replace(/^workspace_mode_/, "")) {
    case "ephemeral":
      return WorkspaceMode.EPHEMERAL;
    case "persistent":
      return WorkspaceMode.PERSISTENT;
    default:
      throw new InvalidArgumentError("expected ephemeral or persistent");
  }
}

function parseSeconds(raw: string): number {
  if (!/^\d+$/.test(raw.trim())) throw new InvalidArgumentError("expected a number of seconds");
  return Number(raw.trim());
}

interface CreateOptions {
  readonly repo: string;
  readonly base?: string;
  readonly mode: WorkspaceMode;
  readonly ttl?: number;
  readonly agent?: string;
  readonly name?: string;
  readonly intent?: string;
  readonly changeset?: string;
  readonly session?: string;
  readonly quiet?: boolean;
}

export function registerWorkspace(program: Command): void {
  const workspace = program.command("workspace").description("an agent's workspace: an overlay on a base commit, tied to a changeset");

  const create = workspace
    .command("create")
    .description("open a workspace for a new session (CreateWorkspace); an ephemeral one is stranded after its lease without heartbeats (berth heartbeat, berth attach)")
    .requiredOption("--repo <repo>", "the repository (id or name)")
    .option("--base <rev>", "the base commit (a commit id or ref; default: the repository's HEAD)")
    .option("--mode <mode>", "ephemeral (stranded when it stops heartbeating) or persistent (lives until its TTL)", parseMode, WorkspaceMode.EPHEMERAL)
    .option("--ttl <seconds>", "persistent only: lifetime (default 86400)", parseSeconds)
    .option("--agent <id>", "the agent's identity (default: BERTH_AGENT; with auth on, the token's)")
    .option("--name <agent-name>", "the agent's name in the repository (default: the next agent-N)")
    .option("--intent <text>", "what the agent sets out to do")
    .addOption(idOption("changeset", "--changeset <id>", "join an existing changeset instead of starting a DRAFT one"))
    .option("--session <id>", "the session id (UUID; default: minted)")
    .option("-q, --quiet", "print only the session's id (S=$(berth workspace create … -q))")
    .action(async (opts: CreateOptions, command: Command) => {
      const cli = cliFor(command);
      const [repoId] = await resolveRepoIds(cli, [opts.repo]);
      const res = await cli.call("creating the workspace", () =>
        cli.workspaces.createWorkspace({
          repoId: repoId!,
          baseCommit: opts.base ?? "",
          mode: opts.mode,
          ...(opts.ttl !== undefined ? { ttlSeconds: opts.ttl } : {}),
          agentId: opts.agent ?? process.env.BERTH_AGENT?.trim() ?? "",
          agentName: opts.name ?? "",
          intent: opts.intent ?? "",
          changesetId: opts.changeset ?? "",
          sessionId: opts.session ?? "",
        }),
      );
      if (opts.quiet) return print(res.workspace!.sessionId);
      if (cli.json) return print(jsonLine(CreateWorkspaceResponseSchema, res));
      print(workspaceBlock(res.workspace!));
    });
  // Without a token the server takes the agent from the request: no agent, no workspace.
  usageRule(create, (c) =>
    c.opts<CreateOptions>().agent === undefined && !process.env.BERTH_AGENT?.trim() && !process.env.BERTH_TOKEN?.trim()
      ? missingOption("--agent <id>", "or BERTH_AGENT; with auth on, BERTH_TOKEN's agent")
      : undefined,
  );

  addShowCommand(workspace);

  workspace
    .command("destroy")
    .description("destroy a session's workspace; the session ends (DestroyWorkspace)")
    .addArgument(idArgument("session", "<session>", "the session id"))
    .action(async (sessionId: string, _opts: unknown, command: Command) => {
      const cli = cliFor(command);
      const res = await cli.call("destroying the workspace", () => cli.workspaces.destroyWorkspace({ sessionId }));
      if (cli.json) return print(jsonLine(DestroyWorkspaceResponseSchema, res));
      print(workspaceBlock(res.workspace!));
    });
}

