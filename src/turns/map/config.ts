/**
 * Workspace-map settings. A budget of zero or less is refused (ConfigError): it would be a
 * way to reinstate "wait forever" or to make the map never appear, and neither is a setting.
 */
import { ConfigError } from "../../config.js";

export interface MapConfig {
  /** How long a turn waits for a walk (ms). Finite and > 0. */
  readonly budgetMs: number;
  /** How long a map, or the fact that a walk lapsed/failed, is cached (ms). 0 caches nothing. */
  readonly ttlMs: number;
  /** Root children are depth 1. Infinity (programmatic only) means unlimited. */
  readonly maxDepth: number;
  /** Entries kept in the map; the rest are counted ("showing N of M"). Infinity (programmatic only) means unlimited. */
  readonly maxEntries: number;
}

export const MAP_DEFAULTS: MapConfig = Object.freeze({
  budgetMs: 1500,
  ttlMs: 30_000,
  maxDepth: 3,
  maxEntries: 200,
});

export const MAP_VARIABLES = Object.freeze({
  budgetMs: "BERTH_MAP_BUDGET_MS",
  ttlMs: "BERTH_MAP_TTL_MS",
  maxDepth: "BERTH_MAP_MAX_DEPTH",
  maxEntries: "BERTH_MAP_MAX_ENTRIES",
} as const);

function intVar(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(name, `expected an integer, got ${JSON.stringify(raw)}`);
  const n = Number(raw.trim());
  if (!Number.isSafeInteger(n) || n < min) {
    throw new ConfigError(name, `must be an integer >= ${min}, got ${raw.trim()}${name === MAP_VARIABLES.budgetMs ? " (a budget of zero or less would wait forever or never; it is refused)" : ""}`);
  }
  return n;
}

/** Reads BERTH_MAP_* from the environment; throws ConfigError on a bad value. */
export function readMapConfig(env: NodeJS.ProcessEnv = process.env): MapConfig {
  return {
    budgetMs: intVar(env, MAP_VARIABLES.budgetMs, MAP_DEFAULTS.budgetMs, 1),
    ttlMs: intVar(env, MAP_VARIABLES.ttlMs, MAP_DEFAULTS.ttlMs, 0),
    maxDepth: intVar(env, MAP_VARIABLES.maxDepth, MAP_DEFAULTS.maxDepth, 1),
    maxEntries: intVar(env, MAP_VARIABLES.maxEntries, MAP_DEFAULTS.maxEntries, 1),
  };
}

/** Validates a (partly programmatic) configuration; throws ConfigError naming the variable. */
export function validateMapConfig(c: MapConfig): MapConfig {
  if (typeof c.budgetMs !== "number" || !Number.isFinite(c.budgetMs) || c.budgetMs <= 0) {
    throw new ConfigError(MAP_VARIABLES.budgetMs, `must be a finite number of milliseconds > 0, got ${String(c.budgetMs)} (the wait for a walk is never unbounded)`);
  }
  if (typeof c.ttlMs !== "number" || !Number.isFinite(c.ttlMs) || c.ttlMs < 0) {
    throw new ConfigError(MAP_VARIABLES.ttlMs, `must be a finite number of milliseconds >= 0, got ${String(c.ttlMs)}`);
  }
  if (typeof c.maxDepth !== "number" || Number.isNaN(c.maxDepth) || c.maxDepth < 1) {
    throw new ConfigError(MAP_VARIABLES.maxDepth, `must be >= 1, got ${String(c.maxDepth)}`);
  }
  if (typeof c.maxEntries !== "number" || Number.isNaN(c.maxEntries) || c.maxEntries < 1) {
    throw new ConfigError(MAP_VARIABLES.maxEntries, `must be >= 1, got ${String(c.maxEntries)}`);
  }
  return Object.freeze({ ...c });
}
