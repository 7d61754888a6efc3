import { z } from "zod";
import { defineConfigSection } from "../lib/config";

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
  }),
);
export type RunnerConfig = z.infer<typeof runnerConfig.schema>;
