/**
 * The berth command's connection to a running server, through @berth/client over Connect: the
 * URL from --server, else BERTH_SERVER, else BERTH_HTTP_ADDR (the address the server listens
 * on, read as the server reads it), else http://127.0.0.1:8080; the bearer token from
 * BERTH_TOKEN — never from a flag, where it would show in `ps`. The CLI is a client only: no
 * domain code here.
 */
import { createBerthClient } from "@berth/client";
import { parseAddress } from "../config.js";
import { CliExit, UsageError, reportError, withSpinner } from "./output.js";
export const DEFAULT_SERVER = "http://127.0.0.1:8080";
/** BERTH_HTTP_ADDR as a URL a client can dial: a wildcard listen host is reached on loopback. */
function fromListenAddress(raw) {
    let addr;
    try {
        addr = parseAddress("BERTH_HTTP_ADDR", raw);
    }
    catch (err) {
        throw new UsageError(err instanceof Error ? err.message : String(err));
    }
    const host = addr.host === "0.0.0.0" || addr.host === "" ? "127.0.0.1" : addr.host === "::" ? "::1" : addr.host;
    return `http://${host.includes(":") ? `[${host}]` : host}:${addr.port}`;
}
export function serverUrlFrom(option, env = process.env) {
    const httpAddr = env.BERTH_HTTP_ADDR?.trim();
    const raw = option?.trim() || env.BERTH_SERVER?.trim() || (httpAddr ? fromListenAddress(httpAddr) : DEFAULT_SERVER);
    let url;
    try {
        url = new URL(raw);
    }
    catch {
        throw new UsageError(`--server / BERTH_SERVER: expected a URL such as ${DEFAULT_SERVER}, got "${raw}"`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
        throw new UsageError(`--server / BERTH_SERVER: expected an http:// or https:// URL, got "${raw}"`);
    }
    return raw.replace(/\/+$/, "");
}
export function connect(options, env = process.env) {
    const serverUrl = serverUrlFrom(options.server, env);
    const token = env.BERTH_TOKEN?.trim();
    const json = options.json === true;
    const client = createBerthClient({ baseUrl: serverUrl, protocol: "connect", ...(token ? { token } : {}) });
    const fail = (err) => new CliExit(reportError(err, serverUrl, json));
    return {
        ...client,
        serverUrl,
        json,
        fail,
        async call(label, work) {
            try {
                return await withSpinner(label, work);
            }
            catch (err) {
                throw fail(err);
            }
        },
    };
}
/** The client for a subcommand's action, from its global options. */
export function cliFor(command) {
    const options = command.optsWithGlobals();
    try {
        return connect(options, process.env);
    }
    catch (err) {
        throw new CliExit(reportError(err, "", options.json === true));
    }
}
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Every page of a List RPC, in order: the CLI prints and searches whole lists. */
export async function allPages(page) {
    const all = [];
    let token = "";
    do {
        const p = await page(token);
        all.push(...p.items);
        token = p.nextPageToken;
    } while (token !== "");
    return all;
}
/** Every repository the caller may see (ListRepositories, all pages). */
export function allRepositories(cli) {
    return allPages((pageToken) => cli.call("listing repositories", () => cli.workspaces.listRepositories({ pageToken })).then((r) => ({ items: r.repositories, nextPageToken: r.nextPageToken })));
}
/** A repository given by id or by name: names are looked up with ListRepositories. */
export async function resolveRepoIds(cli, refs) {
    if (refs.every((r) => UUID.test(r)))
        return [...refs];
    const repositories = await allRepositories(cli);
    return refs.map((ref) => {
        if (UUID.test(ref))
            return ref;
        const found = repositories.find((r) => r.name === ref);
        if (!found)
            throw cli.fail(new UsageError(`no repository named "${ref}" (berth repos ls lists them)`));
        return found.id;
    });
}
/** Collects a repeatable option (--repo a --repo b). */
export function collect(value, previous) {
    return [...(previous ?? []), value];
}
