import { RunnerInboxBase } from "../durable-objects/runner-inbox";
import type { JobEnd } from "../jobs/job-end";
import { notifyOwner } from "./owner-handlers";

/** The RunnerInbox the runtime binds (`RUNNER_INBOX`): the shared inbox, told how to reach job owners. */
export class RunnerInbox extends RunnerInboxBase {
  protected callOwner(end: JobEnd): Promise<void> {
    return notifyOwner(this.env, end);
  }
}
