import { DurableObject } from "cloudflare:workers";
import * as z from "zod";
import type { Env } from "../env";
import {
  budgetLimitsInput,
  normalizeBudgetLimits,
  planRound,
  stageCost,
  MEMBER_STAGE_KINDS,
  type BudgetLimits,
  type PlanOutcome,
  type RoleTurns,
} from "../team/budget";

/**
 * One task's spawn budget (seed 002 `[dispatch.team_budget]`). Every method is one synchronous
 * block of `ctx.storage.sql` with no `await` inside, so under the input gate it is atomic: however
 * many stages charge at once, exactly the budget is granted. A planned round holds its cost, so two
 * rounds planned together cannot both count on the same spawns; stages of the round then draw from
 * that hold, and closing the round gives back what it did not use.
 */
export class TaskBudget extends DurableObject<Env> {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`
      CREATE TABLE IF NOT EXISTS limits (id INTEGER PRIMARY KEY CHECK (id = 1), value TEXT NOT NULL, warnings TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS plans (round INTEGER PRIMARY KEY, outcome TEXT NOT NULL, at INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS holds (round INTEGER PRIMARY KEY, remaining INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS charges (stage_key TEXT PRIMARY KEY, round INTEGER, kind TEXT NOT NULL, cost INTEGER NOT NULL, at INTEGER NOT NULL);
    `);
  }

  /** Fixes the task's limits on first use; later calls get the stored ones (the budget is frozen with the task). */
  async configure(input: ConfigureInput): Promise<{ limits: BudgetLimits; warnings: string[] }> {
    const { limits } = configureInput.parse(input);
    return this.limitsOrInit(limits);
  }

  /**
   * Plans round `round` once (a repeat returns the stored answer): degrades along the chain until it
   * fits what is left, holds its cost, or answers `budget_exhausted`.
   */
  async planRound(input: PlanRoundInput): Promise<PlanOutcome & { remaining_before: number }> {
    const req = planRoundInput.parse(input);
    const { limits } = this.limitsOrInit(req.limits);
    const stored = this.sql.exec<{ outcome: string }>(`SELECT outcome FROM plans WHERE round = ?`, req.round).toArray()[0];
    if (stored) return JSON.parse(stored.outcome);
    const remaining = this.remaining(limits);
    const outcome = { ...planRound(limits, remaining, this.turnsUsed(), req.want), remaining_before: remaining };
    this.sql.exec(`INSERT INTO plans (round, outcome, at) VALUES (?, ?, ?)`, req.round, JSON.stringify(outcome), req.now);
    if (outcome.ok) this.sql.exec(`INSERT INTO holds (round, remaining) VALUES (?, ?)`, req.round, outcome.cost);
    return outcome;
  }

  /**
   * Charges one stage, once per `stage_key` (a repeat is a granted duplicate). A stage of a planned
   * round draws from that round's hold; anything else from what nobody holds.
   */
  async charge(
    input: ChargeInput,
  ): Promise<{ granted: true; duplicate: boolean; remaining: number } | { granted: false; reason: "budget_exhausted"; remaining: number }> {
    const req = chargeInput.parse(input);
    const { limits } = this.limitsOrInit(req.limits);
    if (this.sql.exec(`SELECT 1 FROM charges WHERE stage_key = ?`, req.stage_key).toArray().length > 0) {
      return { granted: true, duplicate: true, remaining: this.remaining(limits) };
    }
    const cost = stageCost(req.kind);
    if (req.round !== undefined) {
      const held = this.sql
        .exec(`UPDATE holds SET remaining = remaining - ? WHERE round = ? AND remaining >= ? RETURNING round`, cost, req.round, cost)
        .toArray();
      if (held.length > 0) {
        this.insertCharge(req, cost);
        return { granted: true, duplicate: false, remaining: this.remaining(limits) };
      }
    }
    if (this.remaining(limits) < cost) return { granted: false, reason: "budget_exhausted", remaining: this.remaining(limits) };
    this.insertCharge(req, cost);
    return { granted: true, duplicate: false, remaining: this.remaining(limits) };
  }

  /** A round ended: what its hold did not use goes back to the task. */
  async closeRound(input: { round: number }): Promise<{ released: number }> {
    const { round } = z.object({ round: z.number().int().min(1) }).parse(input);
    const row = this.sql.exec<{ remaining: number }>(`DELETE FROM holds WHERE round = ? RETURNING remaining`, round).toArray()[0];
    return { released: row?.remaining ?? 0 };
  }

  async status(): Promise<BudgetStatus> {
    const row = this.sql.exec<{ value: string; warnings: string }>(`SELECT value, warnings FROM limits WHERE id = 1`).toArray()[0];
    const limits = row ? (JSON.parse(row.value) as BudgetLimits) : null;
    const spent = this.spent();
    const held = this.held();
    const plans = this.sql.exec<{ round: number; outcome: string }>(`SELECT round, outcome FROM plans ORDER BY round`).toArray();
    return {
      limits,
      warnings: row ? JSON.parse(row.warnings) : [],
      spent,
      held,
      remaining: limits ? limits.max_spawns_per_task - spent - held : null,
      rounds: plans.map((p) => ({ round: p.round, ...(JSON.parse(p.outcome) as PlanOutcome) })),
    };
  }

  private limitsOrInit(raw: z.infer<typeof budgetLimitsInput> | undefined): { limits: BudgetLimits; warnings: string[] } {
    const row = this.sql.exec<{ value: string; warnings: string }>(`SELECT value, warnings FROM limits WHERE id = 1`).toArray()[0];
    if (row) return { limits: JSON.parse(row.value), warnings: JSON.parse(row.warnings) };
    const normalized = normalizeBudgetLimits(raw ?? {});
    this.sql.exec(
      `INSERT INTO limits (id, value, warnings) VALUES (1, ?, ?)`,
      JSON.stringify(normalized.limits),
      JSON.stringify(normalized.warnings),
    );
    return normalized;
  }

  private insertCharge(req: z.infer<typeof chargeInput>, cost: number) {
    this.sql.exec(
      `INSERT INTO charges (stage_key, round, kind, cost, at) VALUES (?, ?, ?, ?, ?)`,
      req.stage_key,
      req.round ?? null,
      req.kind,
      cost,
      req.now,
    );
  }

  private spent(): number {
    return this.sql.exec<{ n: number }>(`SELECT COALESCE(SUM(cost), 0) AS n FROM charges`).one().n;
  }

  private held(): number {
    return this.sql.exec<{ n: number }>(`SELECT COALESCE(SUM(remaining), 0) AS n FROM holds`).one().n;
  }

  private remaining(limits: BudgetLimits): number {
    return limits.max_spawns_per_task - this.spent() - this.held();
  }

  /** A role's turn is its part in one planned round. */
  private turnsUsed(): RoleTurns {
    const turns: RoleTurns = {};
    for (const { outcome } of this.sql.exec<{ outcome: string }>(`SELECT outcome FROM plans`).toArray()) {
      const o = JSON.parse(outcome) as PlanOutcome;
      if (!o.ok) continue;
      if (o.plan.planner) turns.planner = (turns.planner ?? 0) + 1;
      turns.executor = (turns.executor ?? 0) + 1;
      turns.verifier = (turns.verifier ?? 0) + 1;
    }
    return turns;
  }
}

const configureInput = z.object({ limits: budgetLimitsInput });
export type ConfigureInput = z.input<typeof configureInput>;

const planRoundInput = z.object({
  round: z.number().int().min(1),
  want: z.object({ planner: z.boolean(), executors: z.number().int().min(1).max(3), repair: z.boolean(), utility: z.boolean() }),
  limits: budgetLimitsInput.optional(),
  now: z.number().int(),
});
export type PlanRoundInput = z.input<typeof planRoundInput>;

const chargeInput = z.object({
  stage_key: z.string().min(1).max(128),
  kind: z.enum([...MEMBER_STAGE_KINDS, "utility"]),
  round: z.number().int().min(1).optional(),
  limits: budgetLimitsInput.optional(),
  now: z.number().int(),
});
export type ChargeInput = z.input<typeof chargeInput>;

export interface BudgetStatus {
  limits: BudgetLimits | null;
  warnings: string[];
  spent: number;
  held: number;
  remaining: number | null;
  rounds: ({ round: number } & PlanOutcome)[];
}
