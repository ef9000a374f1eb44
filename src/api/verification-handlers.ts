/**
 * SetRepositoryCheck and ListVerifications (issue 29). The check runs in
 * src/verification/verifier.ts; these validate, check the caller (an admin sets a check: it is a
 * command the server runs; a changeset's verifications are read by whoever may diff it) and
 * translate.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { VerificationSchema } from "../../gen/berth/v1/types_pb.js";
import type { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { verificationStateEnum } from "../platform/proto-enums.js";
import { DEFAULT_CHECK_TIMEOUT_SECONDS } from "../sessions/repositories.js";
import type { VerificationRow } from "../verification/verifications.repository.js";
import type { ServiceHandlers } from "./handler.js";
import { auditAdminAction, requireRole, showsServerPaths } from "./authorize.js";
import { requireChangesetReader } from "./changeset-access.js";
import { Check } from "./validate.js";
import { repositoryToWire } from "./wire.js";
import type { WorkspaceServiceDeps } from "./workspace-deps.js";

type Methods = ServiceHandlers<typeof WorkspaceService>;
type VerificationMethods = Pick<Methods, "setRepositoryCheck" | "listVerifications">;

/** A check's bounds: argv entries and their length, and the longest timeout (a day). */
export const CHECK_LIMITS = { args: 64, arg: 4096, timeoutSeconds: 86_400 } as const;

function verificationToWire(v: VerificationRow & { instance_name: string | null }): MessageInitShape<typeof VerificationSchema> {
  return {
    id: v.id,
    changesetId: v.changeset_id,
    state: verificationStateEnum(v.state),
    ...(v.exit_code === null ? {} : { exitCode: v.exit_code }),
    outputTail: v.output_tail,
    startedAt: timestampFromDate(v.started_at),
    ...(v.finished_at ? { finishedAt: timestampFromDate(v.finished_at) } : {}),
    instance: v.instance_name ?? "",
    reason: v.reason,
    commitId: v.commit_id ?? "",
    check: { argv: v.argv, timeoutSeconds: v.timeout_seconds },
  };
}

export function verificationHandlers(deps: WorkspaceServiceDeps): VerificationMethods {
  const { registry } = deps;
  return {
    async setRepositoryCheck(req, ctx) {
      const c = new Check();
      const repoId = c.uuid("repository_id", req.repositoryId);
      const argv = req.check?.argv ?? [];
      if (argv.length > CHECK_LIMITS.args) c.add("check.argv", "TOO_MANY", `at most ${CHECK_LIMITS.args} arguments, got ${argv.length}`);
      argv.forEach((a, i) => c.text(`check.argv[${i}]`, a, { max: CHECK_LIMITS.arg, required: true, allowNewlines: true }));
      const timeout = c.range("check.timeout_seconds", req.check?.timeoutSeconds ?? 0, 0, CHECK_LIMITS.timeoutSeconds);
      c.done();
      // A check is a command the server runs: an admin's to set, never an agent's (docs/security.md).
      requireRole(ctx.principal, "admin");
      auditAdminAction(ctx, { repo_id: repoId!, check: argv.length === 0 ? "cleared" : JSON.stringify(argv) });
      const repo = await registry.setRepositoryCheck(repoId!, argv.length === 0 ? null : { argv, timeoutSeconds: timeout || DEFAULT_CHECK_TIMEOUT_SECONDS });
      return { repository: repositoryToWire(repo, showsServerPaths(ctx.principal)) };
    },

    async listVerifications(req, ctx) {
      const c = new Check();
      const changesetId = c.uuid("changeset_id", req.changesetId);
      c.done();
      // Whoever may diff the changeset (DiffChangeset's rule) may read its checks' output.
      await requireChangesetReader(registry, ctx, changesetId!);
      const rows = deps.verifier ? await deps.verifier.list(changesetId!) : [];
      return { verifications: rows.map(verificationToWire) };
    },
  };
}
