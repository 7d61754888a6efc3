import * as z from "zod";
import { RUNTIMES } from "../jobs/payloads";
import { defineConfigSection } from "../lib/config";

/**
 * `[goals]`: the goal loop (seed 002 "1 ラウンド、3 段階", "予算が足りなくなったとき"). Every task an
 * employee receives, unless created manual, is worked round after round — solo (the employee's own
 * run) or as a team — and judged on one acceptance path, until it is accepted or out of budget.
 */
export const goalsConfig = defineConfigSection(
  "goals",
  z.object({
    /** Rounds a task gets when it does not say (`rounds_left`); the seed's loop stops at 5. */
    iteration_cap: z.number().int().min(1).max(50).default(5),
    /**
     * Tasks of one employee that may have a round in flight at once; the rest wait their turn, oldest
     * first (seed 002 counts 3 concurrent tasks in its capacity arithmetic).
     */
    max_concurrent: z.number().int().min(1).max(100).default(3),
    /**
     * Who judges a round against the frozen criteria. Unset fields are the employee's own runtime and
     * model. The built-in `offline` runtime cannot judge: such a round parks for a human
     * (`evaluator_offline_runtime`) instead of being accepted or rejected on text nobody wrote.
     */
    evaluator: z
      .strictObject({
        runtime: z.enum(RUNTIMES).optional(),
        model: z.string().min(1).max(200).optional(),
      })
      .prefault({}),
    /**
     * The goal loop's progress interval, in minutes (seed 002: a team round's progress line estimates
     * its length as this interval times the 3 required stages). The seed gives no value; 5 makes the
     * line say about 15 minutes. An estimate for the person waiting, never a deadline.
     */
    progress_interval_minutes: z.number().int().min(1).max(1_440).default(5),
    /** The runner's limit for one employee run (a solo round's work). */
    work_timeout_ms: z
      .number()
      .int()
      .min(1_000)
      .max(3_600_000)
      .default(30 * 60_000),
    /** The runner's limit for one evaluator call. */
    evaluate_timeout_ms: z
      .number()
      .int()
      .min(1_000)
      .max(3_600_000)
      .default(10 * 60_000),
  }),
);
export type GoalsConfig = z.infer<typeof goalsConfig.schema>;
