// How the rest of the Worker reaches the rate-window Durable Object: its accessor and RPC types.
// The class file itself is imported at runtime by src/workers/index.ts alone (issue 20).
import type { Env } from "../env";

/** The only way to reach a window: one object per key. */
export function getRateWindow(env: Pick<Env, "RATE_WINDOW">, key: string) {
  return env.RATE_WINDOW.getByName(key);
}
