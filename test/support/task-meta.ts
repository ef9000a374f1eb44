/** The test metadata the service gates (services.ts) set and the skip summary (skip-summary.ts) reads. */
declare module "vitest" {
  interface TaskMeta {
    /** Set on tests a gate skipped: what was missing, e.g. "no PostgreSQL". */
    skippedFor?: string;
    /** Set on tests that ran without one of their checks: what was missing and which check. */
    partlySkipped?: string;
  }
}

export {};
