import type { Env } from "../env";

/**
 * The `role_team` spawn window (seed 002 "レート"): role-member spawns are counted under their own
 * route kind with their own budget (`[dispatch_guard] role_team_max_in_window`, default 60), apart
 * from an employee's own 20. The generic sliding-window `RateWindow` Durable Object belongs to the
 * dispatch feature and is not in this branch yet: this is the seam it plugs into. Until then there
 * is no window, and `roleTeamWindow` says so by returning null (the driver then spawns unthrottled
 * and records `rate_window: "absent"` on the dispatch event).
 */
export interface SpawnRateWindow {
  tryAcquire(input: {
    key: string;
    limit: number;
    windowMs: number;
    now: number;
  }): Promise<{ ok: true } | { ok: false; retry_after_ms: number }>;
}

export const ROLE_TEAM_WINDOW_MS = 60_000;

export function roleTeamWindow(_env: Env): SpawnRateWindow | null {
  return null;
}
