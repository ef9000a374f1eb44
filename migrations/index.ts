import type { Migration } from "kysely";
import * as m0001 from "./0001_foundation.js";
import * as m0002 from "./0002_lifecycle.js";
import * as m0003 from "./0003_events.js";
import * as m0004 from "./0004_overlay.js";
import * as m0005 from "./0005_turns.js";
import * as m0006 from "./0006_claims_released_by_berth.js";
import * as m0007 from "./0007_overlay_version.js";
import * as m0008 from "./0008_turns_scale_out.js";
import * as m0009 from "./0009_overlay_reads.js";
import * as m0010 from "./0010_turns_captured_paths.js";
import * as m0011 from "./0011_repository_capture_exclude.js";
import * as m0012 from "./0012_changeset_commits.js";
import * as m0013 from "./0013_lean_create_indexes.js";
import * as m0014 from "./0014_outbox_and_lifecycle_indexes.js";
import * as m0015 from "./0015_request_ids.js";
import * as m0016 from "./0016_events_unnumbered.js";
import * as m0017 from "./0017_overlay_counters.js";
import * as m0018 from "./0018_changeset_version.js";
import * as m0019 from "./0019_turns_exit_and_commit_messages.js";
import * as m0020 from "./0020_repository_remote.js";
import * as m0021 from "./0021_reservations_and_independent_review.js";
import * as m0022 from "./0022_changeset_transitions.js";
import * as m0023 from "./0023_comments.js";
import * as m0024 from "./0024_verifications.js";

/** Every migration, in order. Names are permanent: a database that ran a name this list lacks is newer than the code. */
export const migrations: Readonly<Record<string, Migration>> = {
  "0001_foundation": m0001,
  "0002_lifecycle": m0002,
  "0003_events": m0003,
  "0004_overlay": m0004,
  "0005_turns": m0005,
  "0006_claims_released_by_berth": m0006,
  "0007_overlay_version": m0007,
  "0008_turns_scale_out": m0008,
  "0009_overlay_reads": m0009,
  "0010_turns_captured_paths": m0010,
  "0011_repository_capture_exclude": m0011,
  "0012_changeset_commits": m0012,
  "0013_lean_create_indexes": m0013,
  "0014_outbox_and_lifecycle_indexes": m0014,
  "0015_request_ids": m0015,
  "0016_events_unnumbered": m0016,
  "0017_overlay_counters": m0017,
  "0018_changeset_version": m0018,
  "0019_turns_exit_and_commit_messages": m0019,
  "0020_repository_remote": m0020,
  "0021_reservations_and_independent_review": m0021,
  "0022_changeset_transitions": m0022,
  "0023_comments": m0023,
  "0024_verifications": m0024,
};
