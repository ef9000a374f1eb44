/**
 * ListChangesets and GetChangeset (issue 29): what a reviewer reads of changesets. Read from
 * PostgreSQL (src/sessions/registry.ts listChangesets, changesetReview), so every instance
 * answers alike; who may read and move one is ./changeset-access.ts.
 */
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { ChangesetState } from "../../gen/berth/v1/types_pb.js";
import type { WorkspaceService } from "../../gen/berth/v1/workspace_service_pb.js";
import { changesetStateEnum, changesetStateName } from "../platform/proto-enums.js";
import type { ChangesetStateName } from "../platform/schema.js";
import { changesetKey, type ChangesetKey } from "../sessions/registry.js";
import { requireRepository } from "./authorize.js";
import { allowedTransitions, ChangesetFacts, requireChangesetReader } from "./changeset-access.js";
import type { ServiceHandlers } from "./handler.js";
import { pageOf, readPage, type PageRule } from "./pagination.js";
import { Check } from "./validate.js";
import { changesetToWire, sessionInfoToWire } from "./wire.js";
import type { WorkspaceServiceDeps } from "./workspace-deps.js";

/** As ListSessions' pages. */
const CHANGESETS_PAGE: PageRule = { list: "changesets", defaultSize: 100, maxSize: 1000 };

export function changesetHandlers(deps: WorkspaceServiceDeps): Pick<ServiceHandlers<typeof WorkspaceService>, "listChangesets" | "getChangeset"> {
  const { registry } = deps;
  return {
    async listChangesets(req, ctx) {
      const c = new Check();
      const repoId = c.uuid("repo_id", req.repoId);
      const page = readPage(c, CHANGESETS_PAGE, req.pageSize, req.pageToken, ["number", "string"]);
      const states: ChangesetStateName[] = [];
      req.states.forEach((s, i) => {
        const name = s === ChangesetState.UNSPECIFIED ? undefined : changesetStateName(s);
        if (name === undefined) c.add(`states[${i}]`, "UNKNOWN_ENUM_VALUE", `${ChangesetState[s] ? `CHANGESET_STATE_${ChangesetState[s]}` : s} is not a state to list; one of CHANGESET_STATE_DRAFT … CHANGESET_STATE_CLOSED`);
        else if (!states.includes(name)) states.push(name);
      });
      c.done();
      await requireRepository(registry, ctx.principal, repoId!);
      const rows = await registry.listChangesets(repoId!, states, page.after as ChangesetKey | undefined, page.size + 1);
      const { items, nextPageToken } = pageOf(CHANGESETS_PAGE, page, rows, changesetKey);
      return { changesets: items.map(changesetToWire), nextPageToken };
    },

    async getChangeset(req, ctx) {
      const c = new Check();
      const changesetId = c.uuid("changeset_id", req.changesetId);
      c.done();
      // One read of who is on it and its repository's grant and policy answers both questions.
      const facts = new ChangesetFacts(registry, ctx, changesetId!);
      await requireChangesetReader(registry, ctx, changesetId!, facts);
      const review = await registry.changesetReview(changesetId!);
      const cs = review.changeset;
      const allowed = await allowedTransitions(registry, ctx, cs.id, cs.state, facts);
      return {
        changeset: changesetToWire(cs),
        transitions: review.transitions.map((t) => ({ from: changesetStateEnum(t.from), to: changesetStateEnum(t.to), reason: t.reason, who: t.who, at: timestampFromMs(t.at) })),
        sessions: review.sessions.map(sessionInfoToWire),
        branch: cs.commitId !== undefined && deps.landing ? deps.landing.branchOf(cs.id) : "",
        mergedInto: review.mergedInto ?? "",
        allowedTransitions: allowed.map(changesetStateEnum),
      };
    },
  };
}
