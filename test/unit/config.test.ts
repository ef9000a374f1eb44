import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { describe, expect, it } from "vitest";
import { advertiseAddress, ConfigError, loadConfig, VARIABLES } from "../../src/config.js";

describe("configuration", () => {
  it("documents every variable in the README's table", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const missing = VARIABLES.filter((v) => !readme.includes(`| \`${v.name}\` |`)).map((v) => v.name);
    expect(missing).toEqual([]);
  });

  it("has working defaults", () => {
    const c = loadConfig({});
    expect(c.grpcAddr).toEqual({ host: "127.0.0.1", port: 50051 });
    expect(c.httpAddr).toEqual({ host: "127.0.0.1", port: 8080 });
    expect(c.databaseUrl).toBeUndefined();
    expect(c.auth.mode).toBe("none");
    expect(c.pinNonTerminal).toBe(true);
  });

  it("keeps environments in the per-user data directory by default, outside any repository", () => {
    expect(loadConfig({ XDG_DATA_HOME: "/data/u", HOME: "/home/u" }).envRoot).toBe("/data/u/berth/envs");
    expect(loadConfig({ HOME: "/home/u" }).envRoot).toBe("/home/u/.local/share/berth/envs");
    // A relative XDG_DATA_HOME is invalid (the XDG spec) and ignored.
    expect(loadConfig({ XDG_DATA_HOME: "rel", HOME: "/home/u" }).envRoot).toBe("/home/u/.local/share/berth/envs");
    expect(loadConfig({ BERTH_ENV_ROOT: "/srv/envs", HOME: "/home/u" }).envRoot).toBe("/srv/envs");
  });

  it.each([
    [{ BERTH_ADDR: "nonsense" }, "BERTH_ADDR"],
    [{ BERTH_ADDR: "127.0.0.1:70000" }, "BERTH_ADDR"],
    [{ BERTH_AUTH: "magic" }, "BERTH_AUTH"],
    [{ BERTH_AUTH: "token" }, "BERTH_AUTH_TOKENS_FILE"],
    [{ BERTH_AUTH: "jwt", BERTH_JWT_SECRET: "short" }, "BERTH_JWT_SECRET"],
    [{ BERTH_TLS_CERT: "/x.pem" }, "BERTH_TLS_KEY"],
    [{ BERTH_SESSION_LEASE_MS: "soon" }, "BERTH_SESSION_LEASE_MS"],
    [{ BERTH_PIN_NONTERMINAL: "maybe" }, "BERTH_PIN_NONTERMINAL"],
    [{ DATABASE_URL: "mysql://x" }, "DATABASE_URL"],
    [{ BERTH_NATS_ENCODING: "xml" }, "BERTH_NATS_ENCODING"],
    [{ BERTH_ADVERTISE_ADDR: "nonsense" }, "BERTH_ADVERTISE_ADDR"],
    [{ BERTH_ADVERTISE_ADDR: "berth-1.internal:0" }, "BERTH_ADVERTISE_ADDR"],
    [{ BERTH_ADVERTISE_ADDR: "0.0.0.0:50051" }, "BERTH_ADVERTISE_ADDR"],
    [{ BERTH_JWT_MAX_LIFETIME_S: "0" }, "BERTH_JWT_MAX_LIFETIME_S"],
    [{ BERTH_JWT_CLOCK_SKEW_S: "-1" }, "BERTH_JWT_CLOCK_SKEW_S"],
    [{ BERTH_MAX_CALLS_PER_AGENT: "many" }, "BERTH_MAX_CALLS_PER_AGENT"],
    [{ BERTH_MAX_STREAMS_PER_AGENT: "-1" }, "BERTH_MAX_STREAMS_PER_AGENT"],
    [{ BERTH_MAX_OVERLAY_FILES: "1.5" }, "BERTH_MAX_OVERLAY_FILES"],
    [{ BERTH_MAX_OVERLAY_BYTES: "-2" }, "BERTH_MAX_OVERLAY_BYTES"],
  ])("refuses %o naming %s", (env, variable) => {
    let error: unknown;
    try {
      loadConfig(env);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe(variable);
  });

  it("refuses a non-loopback address without auth unless insecure", () => {
    expect(() => loadConfig({ BERTH_ADDR: "0.0.0.0:50051" })).toThrow(/--insecure/);
    expect(loadConfig({ BERTH_ADDR: "0.0.0.0:50051" }, { insecure: true }).insecure).toBe(true);
    expect(() => loadConfig({ BERTH_ADDR: "0.0.0.0:50051", BERTH_AUTH: "jwt", BERTH_JWT_SECRET: "x".repeat(32) })).not.toThrow();
    expect(loadConfig({ BERTH_ADDR: "[::1]:0" }).grpcAddr).toEqual({ host: "::1", port: 0 });
  });

  it("advertises the gRPC listener (the bound port; hostname for a wildcard host) unless BERTH_ADVERTISE_ADDR says otherwise", () => {
    expect(advertiseAddress(loadConfig({}), 50051)).toBe("127.0.0.1:50051");
    expect(advertiseAddress(loadConfig({ BERTH_ADDR: "127.0.0.1:0" }), 43210)).toBe("127.0.0.1:43210");
    expect(advertiseAddress(loadConfig({ BERTH_ADDR: "[::1]:0" }), 43210)).toBe("[::1]:43210");
    expect(advertiseAddress(loadConfig({ BERTH_ADDR: "0.0.0.0:50051" }, { insecure: true }), 50051)).toBe(`${hostname()}:50051`);
    expect(advertiseAddress(loadConfig({ BERTH_ADDR: "[::]:50051" }, { insecure: true }), 50051)).toBe(`${hostname()}:50051`);
    expect(advertiseAddress(loadConfig({ BERTH_ADVERTISE_ADDR: "berth-2.internal:6000" }), 50051)).toBe("berth-2.internal:6000");
  });
});
