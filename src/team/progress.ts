/**
 * The progress line a team round's start posts into the conversation its task came from (seed 002:
 * "the estimated minutes are the configured progress interval times the 3 required stages; a progress
 * estimate, not a promise of completion"). Pure: the round and the interval in, the line out.
 */
export const REQUIRED_STAGES = ["planner", "executor", "verifier"] as const;

export interface RoundProgress {
  estimate_minutes: number;
  interval_minutes: number;
  stages: number;
  text: string;
}

export function roundProgressLine(input: { title: string; roundNo: number; intervalMinutes: number }): RoundProgress {
  const stages = REQUIRED_STAGES.length;
  const estimate = input.intervalMinutes * stages;
  const text =
    `Team round ${input.roundNo} started on "${input.title}" (${REQUIRED_STAGES.join(" → ")}). ` +
    `Estimated about ${estimate} min (${stages} stages × ${input.intervalMinutes} min progress interval): ` +
    `an estimate of progress, not a guarantee of completion.`;
  return { estimate_minutes: estimate, interval_minutes: input.intervalMinutes, stages, text };
}
