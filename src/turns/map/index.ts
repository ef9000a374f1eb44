/** The workspace map: a names-only, gitignore-aware tree of a turn's directory, off the critical path. */
export { WorkspaceMapService, type GetMapOptions, type WorkspaceMapServiceOptions } from "./service.js";
export { createWorkerWalker, type WorkerWalker, type WorkerWalkerOptions } from "./worker-walker.js";
export { MAP_DEFAULTS, MAP_VARIABLES, readMapConfig, validateMapConfig, type MapConfig } from "./config.js";
export { renderMap, type RenderInfo } from "./render.js";
export { listingEntries } from "./listing.mjs";
export { OPAQUE_COMPONENTS, HOME_RELATIVE_OPAQUE, compileGitignore, isIgnored, sanitizeName, skipReason, walkTree } from "./walk-core.mjs";
export type { Clock, Listing, MapEntry, MapLogger, MapResult, SkipReason, WalkOptions, WalkResult, Walker, WorkspaceMap } from "./types.js";
