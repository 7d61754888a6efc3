import * as z from "zod";
import { defineConfigSection } from "../lib/config";

const HOUR_MS = 3_600_000;

/** `runner` config section: how the fleet's leases behave. */
export const runnerConfig = defineConfigSection(
  "runner",
  z.object({
    /** How long a lease stays valid without an extend; the runner extends about every third of it. */
    lease_visibility_ms: z.number().int().min(5_000).max(3_600_000).default(60_000),
    /** Leases a job may take before it is dead (API.md: 3). */
    max_attempts: z.number().int().min(1).max(10).default(3),
    /** Upper bound of a long-poll lease (API.md: at most 25 s). */
    max_wait_ms: z.number().int().min(0).max(25_000).default(25_000),
    /**
     * A claim handed out after a long-poll waited is provisional: the runner that asked may have died
     * while it waited. Unacknowledged (ack or first extend) within this window, it goes back to the
     * queue without counting the attempt.
     */
    ack_window_ms: z.number().int().min(1_000).max(60_000).default(10_000),
    /**
     * A job `queued` in D1 that the inbox does not hold after this long is re-dispatched by the
     * `leases` tick (its dispatch message was lost or refused). Queue deliveries take seconds; the
     * grace leaves room for the queue's own retries before we step in.
     */
    reconcile_grace_ms: z
      .number()
      .int()
      .min(10_000)
      .max(24 * HOUR_MS)
      .default(120_000),
    /** A job still queued this long after it (re-)entered the queue is `dead` with `no_runner`. */
    max_queue_ms: z
      .number()
      .int()
      .min(60_000)
      .max(30 * 24 * HOUR_MS)
      .default(24 * HOUR_MS),
    /** How long a runner keeps a failed job's work directory for inspection before sweeping it. */
    keep_failed_work_hours: z
      .number()
      .int()
      .min(0)
      .max(30 * 24)
      .default(24),
    /** Finished jobs leave the inbox after this long (D1 keeps their record), so leasing stays flat. */
    retain_finished_hours: z
      .number()
      .int()
      .min(1)
      .max(30 * 24)
      .default(24),
  }),
);
export type RunnerConfig = z.infer<typeof runnerConfig.schema>;
