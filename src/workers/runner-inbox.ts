import { RunnerInboxBase } from "../durable-objects/runner-inbox";
import type { JobEnd } from "../jobs/job-end";
import { checkBudgetsAfterJob } from "../spend/budgets";
import { notifyOwner } from "./owner-handlers";

/** The RunnerInbox the runtime binds (`RUNNER_INBOX`): the shared inbox, told how to reach job owners. */
export class RunnerInbox extends RunnerInboxBase {
  protected async callOwner(end: JobEnd): Promise<void> {
    // The monthly budgets first (docs/spend.md): a crossing pauses the employee before its owner's
    // handler submits the next job of its, which then waits held. A failed check does not hold up
    // the owner: the `budgets` tick checks every budget within a minute.
    await checkBudgetsAfterJob(this.env, end).catch((err: unknown) => {
      console.warn(`budgets: the check after job ${end.job_id} failed; the budgets tick repeats it`, err);
    });
    await notifyOwner(this.env, end);
  }
}
