import type { Context } from "hono";
import { getRateWindow } from "../../durable-objects/rate-window-rpc";
import { systemClock } from "../../lib/clock";
import { AppError } from "../../lib/errors";
import type { AppEnv } from "../app-env";

/**
 * At most this many event streams open at once per client (README "Limits and refusals"): a viewer
 * token or console session by its operator, a node or runner by its credential, anyone else by the
 * address the request came from. Above the six connections a browser holds per host over HTTP/1.1,
 * so tabs and a reload's overlap fit; far below what would let one client tie up the Worker.
 */
export const STREAM_SLOTS_PER_CLIENT = 8;
/** Seconds a refused client is told to wait: about the time the server takes to see a closed stream. */
export const STREAM_RETRY_AFTER_S = 2;

/**
 * A slot outlives its stream by at most this long when nothing released it (an isolate that died
 * mid-stream): streams end by themselves after `STREAM_MAX_MS`, so a held slot is never older.
 */
const SLOT_LEASE_MARGIN_MS = 60_000;

export interface StreamSlot {
  /** Gives the slot back; safe to call more than once. */
  release(): Promise<void>;
}

/** Who a stream counts against (see STREAM_SLOTS_PER_CLIENT). */
export function streamClientKey(c: Context<AppEnv>, principalId?: string): string {
  if (principalId) return `principal:${principalId}`;
  return `ip:${c.req.header("cf-connecting-ip") ?? "unknown"}`;
}

/**
 * Takes one of the client's stream slots (a `RateWindow` hit named by a fresh token, so it can be
 * given back), or refuses with `429 too_many_streams`. Connection lifetimes are real time, so the
 * system clock is used here, not the test clock.
 */
export async function acquireStreamSlot(env: AppEnv["Bindings"], clientKey: string, streamMaxMs: number): Promise<StreamSlot> {
  const window = getRateWindow(env, `streams:${clientKey}`);
  const token = `stream_${crypto.randomUUID()}`;
  const taken = await window.take({
    limit: STREAM_SLOTS_PER_CLIENT,
    windowMs: streamMaxMs + SLOT_LEASE_MARGIN_MS,
    now: systemClock.nowMs(),
    token,
  });
  if (!taken.ok) {
    throw new AppError(
      "too_many_streams",
      `This client already holds ${taken.count} open event streams (at most ${STREAM_SLOTS_PER_CLIENT}); close one, or retry in ${STREAM_RETRY_AFTER_S} s once a closed page's stream is freed`,
      { extra: { limit: STREAM_SLOTS_PER_CLIENT, open_streams: taken.count, retry_after_s: STREAM_RETRY_AFTER_S } },
    );
  }
  let released: Promise<void> | null = null;
  return {
    release() {
      released ??= window.release({ token }).then(
        () => undefined,
        (err: unknown) => console.error("stream slot release failed", err),
      );
      return released;
    },
  };
}
