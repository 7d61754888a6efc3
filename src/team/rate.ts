import { getRateWindow } from "../durable-objects/rate-window-rpc";
import type { Env } from "../env";

/**
 * The `role_team` spawn window (seed 002 "レート"): role-member spawns are counted under their own
 * route kind with their own budget (`[dispatch_guard] role_team_max_in_window`, default 60), apart
 * from an employee's own 20 (`dispatch:<employee>`). Both are windows of the generic `RateWindow`
 * Durable Object, one object per key. `token` names the spawn (the stage id), so a stage launched
 * again after a refused admission is counted once.
 */
export interface SpawnRateWindow {
  tryAcquire(input: {
    key: string;
    limit: number;
    windowMs: number;
    now: number;
    token: string;
  }): Promise<{ ok: true } | { ok: false; retry_after_ms: number }>;
}

export const ROLE_TEAM_WINDOW_MS = 60_000;

export function roleTeamWindow(env: Env): SpawnRateWindow | null {
  return {
    async tryAcquire({ key, limit, windowMs, now, token }) {
      const taken = await getRateWindow(env, key).take({ limit, windowMs, now, token });
      return taken.ok ? { ok: true } : { ok: false, retry_after_ms: taken.retry_after_ms };
    },
  };
}
