import * as z from "zod";
import { BUDGET_SCOPES } from "../../../db/schema";
import { LEDGER_GROUPS, type LedgerRow } from "../../../spend/ledger";
import type { BudgetView } from "../../../spend/view";
import { timestamp } from "./common";

/** A figure nobody reported is `"unknown"`, never 0 (docs/spend.md). */
const count = z.union([z.number().int().min(0), z.literal("unknown")]);
const usd = z.union([z.number().min(0), z.literal("unknown")]);

/** `GET /v1/cost/ledger` (src/spend/ledger.ts `costLedger`). */
export const costLedgerSchema = z.object({
  group_by: z.enum(LEDGER_GROUPS),
  /** The UTC days covered, inclusive (`YYYY-MM-DD`). */
  from: z.string(),
  to: z.string(),
  rows: z.array(
    z.object({
      key: z.string().nullable(),
      jobs: z.number().int().min(1),
      input_tokens: count,
      output_tokens: count,
      cache_read_input_tokens: count,
      cache_creation_input_tokens: count,
      cost_usd: usd,
      jobs_without_cost: z.number().int().min(0),
    }) satisfies z.ZodType<LedgerRow>,
  ),
});

const limitSchema = z.object({ monthly_usd: z.number().optional(), monthly_tokens: z.number().int().optional() });

/** One budget (src/spend/view.ts `BudgetView`). */
export const budgetSchema = z.object({
  scope: z.enum(BUDGET_SCOPES),
  id: z.string(),
  month: z.string(),
  limit: limitSchema.nullable(),
  spent: z.object({ usd, tokens: count }),
  ratio: z.number().min(0).nullable(),
  state: z.enum(["ok", "warning", "exceeded", "lifted"]),
  warned_at: timestamp.nullable(),
  exceeded_at: timestamp.nullable(),
  lifted_at: timestamp.nullable(),
  lifted_by: z.string().nullable(),
}) satisfies z.ZodType<BudgetView>;

/** `GET /v1/budgets`. */
export const budgetsSchema = z.object({ month: z.string(), warn_ratio: z.number(), budgets: z.array(budgetSchema) });

/** `POST /v1/budgets/{scope}/{id}/lift`. */
export const budgetLiftedSchema = z.object({ budget: budgetSchema, changed: z.boolean(), inboxes_synced: z.boolean() });
