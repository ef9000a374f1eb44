// ESLint (flat config) for Berth: @eslint/js and typescript-eslint's `recommended`, plus the
// type-aware rules that catch real bugs in async server code (promises nobody awaits or whose
// rejection nobody handles, awaits of non-promises, switches that miss a new enum member).
// `npm run lint`. Module structure (layers, cycles) is checked by dependency-cruiser instead:
// `npm run lint:deps`, see .dependency-cruiser.cjs.
import js from "@eslint/js";
import comments from "@eslint-community/eslint-plugin-eslint-comments/configs";
import { defineConfig, globalIgnores } from "eslint/config";
import globals from "globals";
import tseslint from "typescript-eslint";

export default defineConfig(
  globalIgnores(["gen/", "node_modules/", "dist/", "clients/typescript/dist/", "bin/compiled/", ".berth/", "**/.berth/", "examples/python/gen/", "bench/results/"]),

  {
    linterOptions: {
      // An eslint-disable comment that no longer suppresses anything is an error: it would hide the next real finding.
      reportUnusedDisableDirectives: "error",
      reportUnusedInlineConfigs: "error",
    },
  },

  js.configs.recommended,
  tseslint.configs.recommended,
  comments.recommended,

  {
    files: ["**/*.{ts,mts,cts,js,mjs,cjs}"],
    languageOptions: {
      sourceType: "module",
      globals: { ...globals.node },
      parserOptions: {
        // One TypeScript program per tsconfig, as the editor has it. The plain-JS files outside
        // tsconfig.json's program (the .mjs worker files, scripts/*.mjs, bin/, root configs) get a
        // default project of their own.
        projectService: {
          allowDefaultProject: ["*.js", "*.cjs", "bin/*.js", "scripts/*.mjs", "src/turns/map/*.mjs"],
          defaultProject: "tsconfig.json",
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // A promise nobody awaits loses its rejection (an unhandled rejection ends the process).
      // Intentional fire-and-forget is written `void p` with a comment, or better `.catch(log)`.
      "@typescript-eslint/no-floating-promises": "error",
      // An async function passed where a void callback is expected (event emitters, setTimeout,
      // Array#forEach) has its rejection dropped; a promise in an `if` is always truthy.
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/no-unnecessary-type-assertion": "error",
      // A switch over a union or enum (ErrorKind, LifecycleState, a oneof's case, ...) names every
      // member, even with a default: adding one then points at every switch that must decide.
      "@typescript-eslint/switch-exhaustiveness-check": "error",
      // verbatimModuleSyntax: a type-only import must say so, or it is kept at run time.
      "@typescript-eslint/consistent-type-imports": ["error", { prefer: "type-imports", fixStyle: "inline-type-imports" }],
      "@typescript-eslint/no-unused-vars": [
        "error",
        {
          args: "after-used",
          argsIgnorePattern: "^_",
          caughtErrorsIgnorePattern: "^_",
          destructuredArrayIgnorePattern: "^_",
          ignoreRestSiblings: true,
        },
      ],
      // Every eslint-disable says why the rule does not apply there.
      "@eslint-community/eslint-comments/require-description": ["error", { ignore: ["eslint-enable"] }],
      // eslint-disable comments are always paired with rules and reported when unused (above);
      // a disable/enable block is allowed to cover a whole file.
      "@eslint-community/eslint-comments/disable-enable-pair": ["error", { allowWholeFile: true }],
    },
  },

  // Git runs only through src/platform/git.ts, with its fixed safe config (no hooks, fsmonitor,
  // filters, global or system config): a git spawned anywhere else would run whatever the
  // repository's config names. Child processes at all: git.ts, and environment.ts for tar and rm.
  {
    files: ["src/**/*.{ts,mts,cts,js,mjs,cjs}"],
    ignores: ["src/platform/git.ts"],
    rules: {
      "no-restricted-syntax": [
        "error",
        {
          selector: "CallExpression > Literal[value=/^(.*\\/)?git$/]",
          message: "Run git through src/platform/git.ts (execGit, spawnGit): it carries the safe config.",
        },
        {
          selector: "CallExpression > TemplateLiteral[quasis.0.value.raw=/^(.*\\/)?git( |$)/]",
          message: "Run git through src/platform/git.ts (execGit, spawnGit): it carries the safe config.",
        },
      ],
    },
  },
  {
    files: ["src/**/*.{ts,mts,cts,js,mjs,cjs}"],
    // src/cli/run-process.ts: `berth run` exists to start the user's command (under bwrap); that
    // module is the CLI's one child process, so the rule is lifted for it and nothing else in cli/.
    // src/platform/sandbox.ts: bwrap, probed by both and run by the server for a repository's check.
    ignores: ["src/platform/git.ts", "src/turns/environment.ts", "src/cli/run-process.ts", "src/platform/sandbox.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [
            { name: "node:child_process", message: "Child processes: git through src/platform/git.ts; other programs only in turns/environment.ts, cli/run-process.ts (berth run) and platform/sandbox.ts (bwrap)." },
            { name: "child_process", message: "Child processes: git through src/platform/git.ts; other programs only in turns/environment.ts, cli/run-process.ts (berth run) and platform/sandbox.ts (bwrap)." },
          ],
        },
      ],
    },
  },

  // The web console's modules run in the browser (src/console/static/, served as they are).
  {
    files: ["src/console/static/*.js"],
    languageOptions: { globals: { ...globals.browser } },
  },

  // Plain CommonJS config files.
  {
    files: ["**/*.cjs"],
    languageOptions: { sourceType: "commonjs" },
  },
);
