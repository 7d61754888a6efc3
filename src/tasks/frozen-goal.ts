import type { z } from "zod";
import { jsonStringBytes } from "../jobs/limits";

/**
 * How large a task's frozen goal (its title and acceptance criteria, in their JSON encoding) may be.
 * Every round's prompts carry it whole and protected — the employee's wake-up message and the
 * evaluator's within a 64 KiB job prompt, each team stage within its 96 KiB — so a goal over half a
 * job prompt would be accepted and then park as `infra` when its first stage could not be built.
 * It is refused at submission instead.
 */
export const FROZEN_GOAL_MAX_BYTES = 32 * 1024;

export function frozenGoalBytes(title: string, criteria: readonly string[]): number {
  return jsonStringBytes(title) + criteria.reduce((n, c) => n + jsonStringBytes(c), 0);
}

/** A zod check for a body with `title` and `acceptance_criteria`: over the limit is a 422 naming it. */
export function checkFrozenGoalSize(body: { title: string; acceptance_criteria: readonly string[] }, ctx: z.RefinementCtx): void {
  const bytes = frozenGoalBytes(body.title, body.acceptance_criteria);
  if (bytes <= FROZEN_GOAL_MAX_BYTES) return;
  ctx.addIssue({
    code: "custom",
    path: ["acceptance_criteria"],
    message: `the frozen goal (title and acceptance criteria) is at most ${FROZEN_GOAL_MAX_BYTES} bytes of UTF-8 in its JSON encoding; this one is ${bytes}: every round's prompt must carry it whole`,
  });
}
