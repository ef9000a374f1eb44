/**
 * The berth command's connection to a running server, through @berth/client over Connect: the
 * URL from --server, else BERTH_SERVER, else BERTH_HTTP_ADDR (the address the server listens
 * on, read as the server reads it), else http://127.0.0.1:8080; the bearer token from
 * BERTH_TOKEN — never from a flag, where it would show in `ps`. The CLI is a client only: no
 * domain code here.
 */
import { createBerthClient, type BerthClient, type Repository } from "@berth/client";
import type { Command } from "commander";
import { parseAddress } from "../config.js";
import { CliExit, UsageError, reportError, withSpinner } from "./output.js";

export const DEFAULT_SERVER = "http://127.0.0.1:8080";

/** Global options every client subcommand sees (commander's optsWithGlobals()). */
export interface GlobalOptions {
  readonly server?: string;
  readonly json?: boolean;
}

export interface Cli extends BerthClient {
  readonly serverUrl: string;
  readonly json: boolean;
  /** A unary call with the delayed spinner; failures are reported and end the command. */
  call<T>(label: string, work: () => Promise<T>): Promise<T>;
  /** Reports a failure (JSON with --json) and returns the exit code. */
  fail(err: unknown): CliExit;
}

/** BERTH_HTTP_ADDR as a URL a client can dial: a wildcard listen host is reached on loopback. */
function fromListenAddress(raw: string): string {
  let addr;
  try {
    addr = parseAddress("BERTH_HTTP_ADDR", raw);
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const host = addr.host === "0.0.0.0" || addr.host === "" ? "127.0.0.1" : addr.host === "::" ? "::1" : addr.host;
  return `http://${host.includes(":") ? `[${host}]` : host}:${addr.port}`;
}

export function serverUrlFrom(option: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const httpAddr = env.BERTH_HTTP_ADDR?.trim();
  const raw = option?.trim() || env.BERTH_SERVER?.trim() || (httpAddr ? fromListenAddress(httpAddr) : DEFAULT_SERVER);
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

export function connect(options: GlobalOptions, env: NodeJS.ProcessEnv = process.env): Cli {
  const serverUrl = serverUrlFrom(options.server, env);
  const token = env.BERTH_TOKEN?.trim();
  const json = options.json === true;
  const client = createBerthClient({ baseUrl: serverUrl, protocol: "connect", ...(token ? { token } : {}) });
  const fail = (err: unknown) => new CliExit(reportError(err, serverUrl, json));
  return {
    ...client,
    serverUrl,
    json,
    fail,
    async call(label, work) {
      try {
        return await withSpinner(label, work);
      } catch (err) {
        throw fail(err);
      }
    },
  };
}

/** The client for a subcommand's action, from its global options. */
export function cliFor(command: Command): Cli {
  const options = command.optsWithGlobals<GlobalOptions>();
  try {
    return connect(options, process.env);
  } catch (err) {
    throw new CliExit(reportError(err, "", options.json === true));
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Every page of a List RPC, in order: the CLI prints and searches whole lists. */
export async function allPages<T>(page: (pageToken: string) => Promise<{ items: readonly T[]; nextPageToken: string }>): Promise<T[]> {
  const all: T[] = [];
  let token = "";
  do {
    const p = await page(token);
    all.push(...p.items);
    token = p.nextPageToken;
  } while (token !== "");
  return all;
}

/** Every repository the caller may see (ListRepositories, all pages). */
export function allRepositories(cli: Cli): Promise<Repository[]> {
  return allPages((pageToken) => cli.call("listing repositories", () => cli.workspaces.listRepositories({ pageToken })).then((r) => ({ items: r.repositories, nextPageToken: r.nextPageToken })));
}

/** A repository given by id or by name: names are looked up with ListRepositories. */
export async function resolveRepoIds(cli: Cli, refs: readonly string[]): Promise<string[]> {
  if (refs.every((r) => UUID.test(r))) return [...refs];
  const repositories = await allRepositories(cli);
  return refs.map((ref) => {
    if (UUID.test(ref)) return ref;
    const found = repositories.find((r) => r.name === ref);
    if (!found) throw cli.fail(new UsageError(`no repository named "${ref}" (berth repos ls lists them)`));
    return found.id;
  });
}

/** Collects a repeatable option (--repo a --repo b). */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
