import { getDb } from "../db/client";
import type { Env } from "../env";
import { loadClock } from "../lib/clock";
import type { JobEnd } from "../jobs/job-end";
import { recordReplyEnd } from "./messages";

/**
 * Owner handler of `conversation` jobs (an employee's reply): the reply lands as the employee's
 * turn, or a failed turn says why (a dead job is a recorded failure, never a hung conversation).
 * Keyed by the job: an owner call repeated lands once.
 */
export async function onReplyJobEnd(env: Env, end: JobEnd): Promise<void> {
  const now = (await loadClock(env)).now();
  const db = getDb(env.DB);
  if (end.status === "completed" && typeof end.result?.text === "string") {
    await recordReplyEnd(
      db,
      end.owner.id,
      end.job_id,
      {
        status: "completed",
        text: end.result.text,
        ...(typeof end.result.runtime === "string" ? { runtime: end.result.runtime } : {}),
        ...(typeof end.result.model === "string" ? { model: end.result.model } : {}),
      },
      now,
    );
    return;
  }
  const error =
    end.status === "completed"
      ? { code: "empty_answer", message: "the reply job completed without a text answer" }
      : { code: end.error?.code ?? end.reason ?? "unknown", message: end.error?.message ?? `the reply job ended ${end.status}` };
  await recordReplyEnd(db, end.owner.id, end.job_id, { status: "failed", error }, now);
}
