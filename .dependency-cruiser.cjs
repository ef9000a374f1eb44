/**
 * Berth's module structure, checked by dependency-cruiser (`npm run lint:deps`).
 *
 * src/ is layered, lowest first; a folder may import only from its own folder and lower ones:
 *
 *    1 config.ts       nothing from src/
 *    2 platform/       platform only (+ gen/ for the stored event format, migrations/ for migrate.ts)
 *    3 auth/           platform, config
 *   3b repository/     platform (where a repository's git objects are: a source path or a mirror of a git server)
 *    4 sessions/       platform, repository
 *    5 claims/         platform, sessions, repository
 *    6 overlay/        platform, sessions, claims, repository
 *    7 turns/          platform, sessions, claims, overlay, repository, config
 *   7b verification/   platform, sessions, claims, overlay, turns, repository (a repository's check on VERIFYING)
 *    8 delivery/       platform, config
 *    9 observability/  platform, sessions, claims, overlay, turns, delivery, repository, config
 *   10 api/            platform, auth, sessions, claims, overlay, turns, verification, delivery, repository, config
 *   10b console/       nothing from src/ (the web console: a static-file route and its browser modules)
 *   10c mcp/           nothing from src/ but gen/ (the MCP tools: a client of WorkspaceService, used by cli/ and transport/)
 *   11 transport/      everything above (not cli/, not main.ts)
 *   12 cli/            config, platform/errors.ts, transport/status.ts, mcp/, gen/ (a client, not the server)
 *   13 main.ts         anything
 *
 * Plus: no cycles in src/; gen/ imports nothing from src/; the domain layers do not import gen/;
 * src/ imports no devDependency. test/, bench/, scripts/ and examples/ may import anything.
 *
 * Paths are relative to the repository root. `.mjs` files (src/turns/map/walk-*.mjs) belong to
 * the folder they sit in. Type-only imports count (tsPreCompilationDeps): a type from a higher
 * layer couples the code as much as a value does. TypeScript's `.js` specifiers are resolved to
 * the `.ts` files through the tsconfig and `extensionAlias`.
 */

/** A rule forbidding `from` to import anything in src/ except `allowed` (regexes, anchored at src/). */
function layer(name, from, allowed, comment) {
  return {
    name,
    severity: "error",
    comment,
    from: { path: from },
    to: { path: "^src/", pathNot: allowed },
  };
}

/** The only src/ modules outside cli/ that the CLI (a client) may load. */
// error-reasons.ts is data (the list of reasons errors.ts types its reasons with): no imports of its own.
// mcp/ is the MCP tool layer, itself a client of WorkspaceService (`berth mcp` serves it on stdio).
// platform/sandbox.ts is bwrap's arguments and probe (node built-ins only): berth run and the server's checks share it.
const CLI_ALLOWED = ["^src/config\\.ts$", "^src/platform/errors\\.ts$", "^src/platform/error-reasons\\.ts$", "^src/platform/sandbox\\.ts$", "^src/transport/status\\.ts$", "^src/mcp/"];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    // ---- the layers of src/ ------------------------------------------------------------------
    layer(
      "config-imports-nothing",
      "^src/config\\.ts$",
      ["^src/config\\.ts$"],
      "Layer 1: src/config.ts reads and validates the environment and is imported by almost every layer; " +
        "it imports nothing from src/, so it can be loaded (and tested) on its own and never drags server code into the CLI.",
    ),
    layer(
      "platform-is-the-bottom",
      "^src/platform/",
      ["^src/platform/"],
      "Layer 2: platform/ (database, schema, errors, logger, clock, outbox, proto-enums, migrate) is the base every " +
        "other layer stands on; it imports nothing else from src/ (not even config.ts: it is given its settings).",
    ),
    layer(
      "auth-layer",
      "^src/auth/",
      ["^src/(auth|platform)/", "^src/config\\.ts$"],
      "Layer 3: auth/ (tokens, JWT, principals) may import platform/ and config.ts only; it knows nothing of " +
        "sessions, turns or the API that asks it who a caller is.",
    ),
    layer(
      "repository-layer",
      "^src/repository/",
      ["^src/(repository|platform)/"],
      "Layer 3b: repository/ (where this instance finds a repository's git objects: its source path, or its mirror " +
        "of a git server, fetched and pushed) may import platform/ only; every domain layer asks it, it knows none of them.",
    ),
    layer(
      "sessions-layer",
      "^src/sessions/",
      ["^src/(sessions|platform|repository)/"],
      "Layer 4: sessions/ (registry, lifecycle, workspaces) is the lowest domain layer and may import platform/ and " +
        "repository/ only; claims, overlay and turns are built on it, never the other way round.",
    ),
    layer(
      "claims-layer",
      "^src/claims/",
      ["^src/(claims|platform|sessions|repository)/"],
      "Layer 5: claims/ may import platform/ and sessions/ only (a claim is held on a session's workspace).",
    ),
    layer(
      "overlay-layer",
      "^src/overlay/",
      ["^src/(overlay|platform|sessions|claims|repository)/"],
      "Layer 6: overlay/ (the per-workspace file overlay and its symbol index) may import platform/, sessions/ " +
        "and claims/ only; turns/ and everything above use it, it does not use them.",
    ),
    layer(
      "turns-layer",
      "^src/turns/",
      ["^src/(turns|platform|sessions|claims|overlay|repository)/", "^src/config\\.ts$"],
      "Layer 7: turns/ (the scheduler, the turn store and the workspace map, .mjs walk files included) may import " +
        "platform/, sessions/, claims/, overlay/ and config.ts only; it never reaches up into delivery, api or transport.",
    ),
    layer(
      "verification-layer",
      "^src/verification/",
      ["^src/(verification|turns|platform|sessions|claims|overlay|repository)/"],
      "Layer 7b: verification/ (a repository's check run on a changeset moved to VERIFYING) may import platform/, " +
        "sessions/, overlay/ (the changeset's commit), turns/ (its checkout) and repository/; only api/ and transport/ use it.",
    ),
    layer(
      "delivery-layer",
      "^src/delivery/",
      ["^src/(delivery|platform)/", "^src/config\\.ts$"],
      "Layer 8: delivery/ (event store, hub, NATS relay, pruner) moves the outbox's events and may import platform/ " +
        "and config.ts only: it carries the stored event format (platform/outbox.ts), not the domain that wrote it.",
    ),
    layer(
      "observability-layer",
      "^src/observability/",
      ["^src/(observability|platform|sessions|claims|overlay|turns|delivery|repository)/", "^src/config\\.ts$"],
      "Layer 9: observability/ (metrics, tracing) reads the domain and delivery layers (platform, sessions, claims, " +
        "overlay, turns, delivery, config); the API and transports call into it, never the other way round.",
    ),
    layer(
      "api-layer",
      "^src/api/",
      ["^src/(api|platform|auth|sessions|claims|overlay|turns|verification|delivery|repository)/", "^src/config\\.ts$"],
      "Layer 10: api/ (the RPC handlers) may import platform, auth, sessions, claims, overlay, turns, delivery and " +
        "config; it is transport-agnostic: it does not import transport/, observability/ or cli/.",
    ),
    layer(
      "console-layer",
      "^src/console/",
      ["^src/console/"],
      "Layer 10b: console/ (the web console: serve.ts, the route of its static files, and static/, the browser " +
        "modules, which talk to the server over Connect like any client) imports nothing else from src/; " +
        "transport/ mounts its route on the HTTP port, and no domain layer knows it exists.",
    ),
    layer(
      "mcp-is-a-client",
      "^src/mcp/",
      ["^src/mcp/"],
      "Layer 10c: mcp/ (the MCP tools and their Streamable HTTP route) is written against the generated " +
        "WorkspaceService client only: it imports gen/ and nothing else from src/, so every rule stays in the RPC " +
        "handlers it calls. cli/ serves it on stdio over the network; transport/ mounts it at /mcp over its own pipeline.",
    ),
    layer(
      "transport-layer",
      "^src/transport/",
      ["^src/(transport|platform|auth|sessions|claims|overlay|turns|verification|delivery|observability|api|console|mcp|repository)/", "^src/config\\.ts$"],
      "Layer 11: transport/ (gRPC and Connect servers, the pipeline, health, reflection) may import every layer " +
        "below it; it does not import cli/ (a client) or main.ts (the composition root).",
    ),
    layer(
      "cli-is-a-client",
      "^src/cli/",
      ["^src/cli/", ...CLI_ALLOWED],
      "Layer 12: cli/ is a client of the server over gRPC/Connect: besides gen/ it may import only config.ts, " +
        "platform/errors.ts, transport/status.ts (status-code names) and mcp/ (the MCP tools, a client too); it must not import server internals.",
    ),
    {
      name: "cli-imports-stay-small",
      severity: "error",
      comment:
        "Layer 12, transitively: the src/ modules cli/ may use (config.ts, platform/errors.ts and its error-reasons.ts, " +
        "transport/status.ts) reach no other src/ module, directly or through others; otherwise `berth`, a client, " +
        "would load server internals through them (transport/ may import anything, so only this rule guards status.ts).",
      from: { path: CLI_ALLOWED },
      to: { reachable: true, path: "^src/", pathNot: CLI_ALLOWED },
    },
    {
      name: "nothing-imports-main",
      severity: "error",
      comment:
        "Layer 13: src/main.ts is the composition root and may import anything; nothing in src/ imports it.",
      from: { path: "^src/", pathNot: "^src/main\\.ts$" },
      to: { path: "^src/main\\.ts$" },
    },

    // ---- gen/ and migrations/ ----------------------------------------------------------------
    {
      name: "gen-is-generated",
      severity: "error",
      comment:
        "gen/ is generated from proto/ by `buf generate` and must not depend on the code that uses it; " +
        "it imports nothing from src/.",
      from: { path: "^gen/" },
      to: { path: "^src/" },
    },
    {
      name: "domain-does-not-import-gen",
      severity: "error",
      comment:
        "The wire format (gen/) stays at the edges: only platform/outbox.ts and platform/proto-enums.ts (the stored " +
        "event format and the one mapping of state names to protobuf enums), delivery/, api/, transport/, " +
        "observability/, cli/, mcp/ and main.ts import gen/. config.ts, auth/ and the domain layers (sessions, claims, " +
        "overlay, turns) use their own types and map through platform/proto-enums.ts.",
      from: {
        path: "^src/",
        pathNot: [
          "^src/platform/(outbox|proto-enums)\\.ts$",
          "^src/(delivery|api|transport|observability|cli|mcp)/",
          "^src/main\\.ts$",
        ],
      },
      to: { path: "^gen/" },
    },
    {
      name: "migrations-only-from-migrate",
      severity: "error",
      comment:
        "migrations/ is applied by platform/migrate.ts only; any other src/ module importing a migration would " +
        "couple running code to a frozen schema step.",
      from: { path: "^src/", pathNot: "^src/platform/migrate\\.ts$" },
      to: { path: "^migrations/" },
    },
    {
      name: "migrations-are-frozen",
      severity: "error",
      comment:
        "A migration is frozen history: it imports nothing from src/ (whose schema types and helpers change " +
        "over time), only kysely; otherwise an old migration would silently change meaning.",
      from: { path: "^migrations/" },
      to: { path: "^src/" },
    },
    {
      name: "src-not-to-tooling",
      severity: "error",
      comment:
        "The service does not import tests, benchmarks, scripts or examples: those may import anything in src/, " +
        "and are not shipped with it.",
      from: { path: "^src/" },
      to: { path: "^(test|bench|scripts|examples)/" },
    },

    // ---- general hygiene ---------------------------------------------------------------------
    {
      name: "no-circular",
      severity: "error",
      comment:
        "No cycles anywhere in src/, inside one folder included: a cycle makes module load order (and thus " +
        "top-level initialisation) fragile and means the two modules are one; break it by moving the shared " +
        "part down a layer or by passing a dependency in.",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "src-not-to-dev-dep",
      severity: "error",
      comment:
        "src/ runs in production, where devDependencies are not installed (npm ci --omit=dev): it may import " +
        "only packages from `dependencies` (and node builtins).",
      from: { path: "^src/" },
      to: { dependencyTypes: ["npm-dev"], pathNot: ["node_modules/@types/"] },
    },
    {
      name: "no-non-package-json",
      severity: "error",
      comment:
        "An import of a package that is not in package.json works only by accident (it is a transitive dependency) " +
        "and may vanish or change version on any install: add it to package.json.",
      from: { path: "^(src|gen|migrations)/" },
      to: { dependencyTypes: ["npm-no-pkg", "npm-unknown"] },
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      comment:
        "An import dependency-cruiser cannot resolve to a file is either a typo or a resolution setting gone wrong " +
        "(e.g. a `.js` specifier not mapped to its `.ts` file); either way the other rules would silently miss it.",
      from: {},
      to: { couldNotResolve: true },
    },
  ],

  options: {
    // Node builtins and packages are endpoints: their own imports are not ours to check.
    doNotFollow: { path: "node_modules" },
    exclude: { path: ["^examples/python/", "(^|/)\\.berth/", "^dist/"] },
    // Count `import type` too: a type from a higher layer is a dependency on that layer.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    // NodeNext specifiers: dependency-cruiser resolves "./x.js" to ./x.ts (and "./x.mjs" to ./x.mts or
    // ./x.d.mts) itself when the .js file does not exist, as tsc does; this version has no extensionAlias.
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      mainFields: ["module", "main", "types", "typings"],
    },
    skipAnalysisNotInRules: true,
  },
};
