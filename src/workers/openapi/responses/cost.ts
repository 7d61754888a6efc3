import * as z from "zod";

/**
 * `GET /v1/cost/by-role` (src/team/ledger.ts `costByRole`): spend per role, runtime and model. A group
 * where no stage reported usage (or cost) says `unknown` rather than 0; a partly reported one counts
 * the stages that did not.
 */
export const costByRoleSchema = z.object({
  episode_id: z.string().optional(),
  by_role: z.array(
    z.object({
      role: z.string(),
      runtime: z.string(),
      model: z.string(),
      stages: z.number().int(),
      stages_with_usage: z.number().int(),
      stages_without_usage: z.number().int(),
      usage: z.union([
        z.object({
          input_tokens: z.number().int().optional(),
          output_tokens: z.number().int().optional(),
          cache_read_input_tokens: z.number().int().optional(),
          cache_creation_input_tokens: z.number().int().optional(),
        }),
        z.literal("unknown"),
      ]),
      cost_usd: z.union([z.number(), z.literal("unknown")]),
      stages_without_cost: z.number().int(),
    }),
  ),
});
