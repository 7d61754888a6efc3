import * as z from "zod";
import { defineConfigSection } from "../lib/config";
import { RUNTIMES } from "./payloads";

/** A pool's shard count from a moment on: jobs submitted at or after `from` are spread over `shards`. */
const shardStep = z.strictObject({
  from: z.iso.datetime({ offset: true }),
  shards: z.number().int().min(2).max(64),
});

/**
 * Steps of one runtime's shard count, oldest first. Each applies to the jobs submitted from its
 * `from` on, so a job's shard is fixed by its submission time and never changes when a step is added
 * (a redelivered dispatch message or the reconciler lands it in the same shard). The count only
 * grows: every old shard stays among the new ones, and runners keep leasing from it.
 */
const shardSteps = z
  .array(shardStep)
  .max(16)
  .superRefine((steps, ctx) => {
    for (let i = 1; i < steps.length; i++) {
      if (Date.parse(steps[i]!.from) <= Date.parse(steps[i - 1]!.from))
        ctx.addIssue({ code: "custom", path: [i, "from"], message: "steps must be in increasing `from` order" });
      if (steps[i]!.shards <= steps[i - 1]!.shards)
        ctx.addIssue({ code: "custom", path: [i, "shards"], message: "the shard count only grows (lowering it would strand queued jobs)" });
    }
  });

/**
 * `inbox` config section (issue 26): how the RunnerInbox is partitioned (bench/README.md "Past one
 * inbox"). By default one inbox per runtime pool (`pool:<runtime>`); a hot runtime's pool can be
 * split further into hash shards. Add a step with `from` a minute or more ahead (config caches
 * hold a value up to 2 s, queue retries run longer) and never edit or remove a past step: a job's
 * shard is computed from its submission time and the steps, by every caller, at every call.
 */
export const inboxConfig = defineConfigSection(
  "inbox",
  z.object({
    /**
     * `false` puts every job in the one `fleet` inbox, the layout before issue 26, kept for the
     * comparison benchmark (`npm run bench -- inbox-pools`). Switching layouts strands nothing
     * forever: the other layout's inboxes are still swept, reached by their leases, and asked for
     * queued work now and then (`DRAIN_EVERY_MS`), but until then their queued jobs wait.
     */
    pools: z.boolean().default(true),
    /** Per runtime: its shard steps (absent: one shard, the inbox `pool:<runtime>`). */
    shards: z.partialRecord(z.enum(RUNTIMES), shardSteps).default({}),
  }),
);
export type InboxLayout = z.infer<typeof inboxConfig.schema>;
