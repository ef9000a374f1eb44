/**
 * The berth command's connection to a running server: Connect over HTTP (--server, else
 * BERTH_SERVER, else http://127.0.0.1:8080), with the bearer token from BERTH_TOKEN — never
 * from a flag, where it would show in `ps`. The CLI is a client only: no domain code here.
 */
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { Command } from "commander";
import { TurnService } from "../../gen/berth/v1/turn_service_pb.js";
import { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { CliExit, UsageError, reportError, withSpinner } from "./output.js";

export const DEFAULT_SERVER = "http://127.0.0.1:8080";

/** Global options every client subcommand sees (commander's optsWithGlobals()). */
export interface GlobalOptions {
  readonly server?: string;
  readonly json?: boolean;
}

export interface Cli {
  readonly serverUrl: string;
  readonly json: boolean;
  readonly workspaces: Client<typeof WorkspaceService>;
  readonly turns: Client<typeof TurnService>;
  /** A unary call with the delayed spinner; failures are reported and end the command. */
  call<T>(label: string, work: () => Promise<T>): Promise<T>;
}

export function serverUrlFrom(option: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const raw = option?.trim() || env.BERTH_SERVER?.trim() || DEFAULT_SERVER;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--server / BERTH_SERVER: expected a URL such as ${DEFAULT_SERVER}, got "${raw}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UsageError(`--server / BERTH_SERVER: expected an http:// or https:// URL, got "${raw}"`);
  }
  return raw.replace(/\/+$/, "");
}

function bearer(token: string): Interceptor {
  return (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
}

export function connect(options: GlobalOptions, env: NodeJS.ProcessEnv = process.env, interceptors: readonly Interceptor[] = []): Cli {
  const serverUrl = serverUrlFrom(options.server, env);
  const token = env.BERTH_TOKEN?.trim();
  const transport = createConnectTransport({
    baseUrl: serverUrl,
    httpVersion: "1.1",
    interceptors: [...(token ? [bearer(token)] : []), ...interceptors],
  });
  return {
    serverUrl,
    json: options.json === true,
    workspaces: createClient(WorkspaceService, transport),
    turns: createClient(TurnService, transport),
    async call(label, work) {
      try {
        return await withSpinner(label, work);
      } catch (err) {
        throw new CliExit(reportError(err, serverUrl));
      }
    },
  };
}

/** The client for a subcommand's action, from its global options. */
export function cliFor(command: Command, interceptors: readonly Interceptor[] = []): Cli {
  try {
    return connect(command.optsWithGlobals<GlobalOptions>(), process.env, interceptors);
  } catch (err) {
    throw new CliExit(reportError(err, ""));
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A repository given by id or by name: names are looked up with ListRepositories. */
export async function resolveRepoIds(cli: Cli, refs: readonly string[]): Promise<string[]> {
  if (refs.every((r) => UUID.test(r))) return [...refs];
  const { repositories } = await cli.call("listing repositories", () => cli.workspaces.listRepositories({}));
  return refs.map((ref) => {
    if (UUID.test(ref)) return ref;
    const found = repositories.find((r) => r.name === ref);
    if (!found) throw new CliExit(reportError(new UsageError(`no repository named "${ref}" (berth repos ls lists them)`), cli.serverUrl));
    return found.id;
  });
}

/** Collects a repeatable option (--repo a --repo b). */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
