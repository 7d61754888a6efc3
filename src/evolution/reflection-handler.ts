import type { Env } from "../env";
import { loadClock } from "../lib/clock";
import { answerOf } from "../jobs/model-answer";
import type { JobEnd } from "../jobs/job-end";
import { endRequest } from "./triggers";

/** A reflection's memory entry matters as much as the surprise that caused it was significant. */
export const REFLECTION_IMPORTANCE = 0.8;

/**
 * Owner handler of `evolution_request` jobs (a reflection): its answer becomes a memory entry of the
 * employee; the offline runtime's labelled text is not a reflection and is recorded as such.
 * Either way the request ends and gives back its lock and semaphore slot.
 */
export async function onReflectionJobEnd(env: Env, end: JobEnd): Promise<void> {
  const now = (await loadClock(env)).now();
  if (end.status !== "completed") {
    await endRequest(env, end.owner.id, { status: "failed", reason: end.error?.code ?? end.reason ?? `job_${end.status}` }, now);
    return;
  }
  const answer = answerOf(end.result);
  if (answer.offline) {
    await endRequest(env, end.owner.id, { status: "failed", reason: "reflection_offline_runtime" }, now);
    return;
  }
  if (!answer.text?.trim()) {
    await endRequest(env, end.owner.id, { status: "failed", reason: "empty_answer" }, now);
    return;
  }
  await endRequest(env, end.owner.id, { status: "done", memory: { text: answer.text.trim(), importance: REFLECTION_IMPORTANCE } }, now);
}
