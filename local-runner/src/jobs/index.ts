/** Dispatch by job kind. Unknown kinds are failed, not ignored, so they do not sit leased until expiry. */
import type { LeasedJob } from "../protocol.ts";
import { runAttachmentsArchiveJob } from "./attachments-archive.ts";
import { runEmployeeTurnJob } from "./employee-turn.ts";
import { runEvalCaseJob } from "./eval-case.ts";
import { runTeamStageJob } from "./team-stage.ts";
import { runUtilityJob } from "./utility.ts";
import type { JobContext, JobOutcome } from "./utility.ts";

export type { JobContext, JobOutcome } from "./utility.ts";

export async function runJob(job: LeasedJob, ctx: JobContext): Promise<JobOutcome> {
  switch (job.kind) {
    case "utility":
      return runUtilityJob(job, ctx);
    case "team_stage":
      return runTeamStageJob(job, ctx);
    case "employee_turn":
      return runEmployeeTurnJob(job, ctx);
    case "eval_case":
      return runEvalCaseJob(job, ctx);
    case "attachments_archive":
      return runAttachmentsArchiveJob(job, ctx);
    default:
      return {
        kind: "failed",
        failure: { code: "unsupported_job", message: `job kind "${job.kind}" is not supported by this runner`, retryable: false },
      };
  }
}
