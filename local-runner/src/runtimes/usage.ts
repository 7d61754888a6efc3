/**
 * Usage summed over a stage's legs (seed 002 "役割ごとの帰属"): each counter is added where a leg
 * reported it (saturating), a counter only some legs measured keeps their total instead of being
 * zeroed, `usage_legs` says how many legs contributed, and nothing at all is returned when no leg
 * reported usage: unknown is not zero.
 */
import type { Usage } from "../protocol.ts";

export function sumUsage(legs: ReadonlyArray<Usage | undefined>): { usage?: Usage; usage_legs?: number } {
  const total: Usage = {};
  let contributing = 0;
  for (const leg of legs) {
    if (!leg) continue;
    let reported = false;
    for (const [key, value] of Object.entries(leg) as Array<[keyof Usage, number | undefined]>) {
      if (typeof value !== "number" || !Number.isFinite(value) || value < 0) continue;
      total[key] = Math.min(Number.MAX_SAFE_INTEGER, (total[key] ?? 0) + value);
      reported = true;
    }
    if (reported) contributing += 1;
  }
  return contributing === 0 ? {} : { usage: total, usage_legs: contributing };
}
