import * as z from "zod";
import { brokerAvailability } from "../approvals/channels";
import { defineConfigSection } from "../lib/config";
import { AppError } from "../lib/errors";

/** `[topology_evolution]` with the seed's keys and defaults (seed 000 "設定"). Off unless enabled. */
export const topologyConfig = defineConfigSection(
  "topology_evolution",
  z.object({
    enabled: z.boolean().default(false),
    lookback_days: z.number().int().min(1).max(365).default(14),
    min_samples: z.number().int().min(1).max(10_000).default(5),
    reject_rate_threshold: z.number().min(0).max(1).default(0.6),
    observe_hours: z
      .number()
      .min(1 / 60)
      .max(24 * 90)
      .default(24),
    proposal_cooldown_days: z.number().min(0).max(365).default(7),
    tick_secs: z
      .number()
      .int()
      .min(60)
      .max(7 * 86_400)
      .default(3600),
    approval_ttl_secs: z
      .number()
      .int()
      .min(60)
      .max(30 * 86_400)
      .default(86_400),
  }),
  {
    // Seed 000: D5 is off by default and starts only with an approval broker that can reach a human;
    // a proposal mechanism without its human gate is not allowed to exist. Switching it off, or
    // changing it while it is already on, is always allowed.
    admit: async ({ env, db, now }, value, old) => {
      if (!value.enabled || old.enabled) return;
      const broker = await brokerAvailability(env, db, now);
      if (broker.available) return;
      throw new AppError(
        "approval_broker_unavailable",
        "topology evolution needs someone who can approve its proposals: create a manager operator (POST /v1/admin/operators with role manager) or configure an approval channel ([approvals] slack or webhook), then enable it",
        { extra: { deciders: broker.deciders, channels: broker.channels } },
      );
    },
  },
);
export type TopologyConfig = z.infer<typeof topologyConfig.schema>;
