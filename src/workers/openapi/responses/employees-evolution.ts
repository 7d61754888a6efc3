import * as z from "zod";
import {
  AEE_JOB_PURPOSES,
  AEE_ROUND_STATUSES,
  AEE_ROUND_STEPS,
  EVOLUTION_REQUEST_KINDS,
  EVOLUTION_REQUEST_STATUSES,
  GVU_ROUND_STATUSES,
  SETTLE_STATUSES,
  SOUL_SOURCES,
  SOUL_VERSION_STATUSES,
} from "../../../db/schema";
import { RUNTIMES } from "../../../db/runtimes";
import type { roundSummary } from "../../../evolution/aee-view";
import type { RoundPlan } from "../../../evolution/aee-context";
import { GATE_ORDER } from "../../../evolution/aee-gate";
import { INTENTS, type Intent } from "../../../evolution/aee-intent";
import type { MeasureVector } from "../../../evolution/aee-measure";
import { REJECTION_GATES, type RoundState } from "../../../evolution/aee-round";
import { COMMIT_REASONS, type CommitVerdict } from "../../../evolution/commit-gate";
import { employeeEvolution, EVOLUTION_STRATEGIES, evolutionSchema, TOGGLEABLE } from "../../../evolution/config";
import type { GeneExport } from "../../../evolution/gene";
import type { Stagnation } from "../../../evolution/stagnation";
import { addOpSchema } from "../../../evolution/playbook-merge";
import { ENTRY_STATES, playbookEntrySchema } from "../../../evolution/playbook";
import type { draftMigration, evalScaffold } from "../../../evolution/playbook-ops";
import type { soulVersionsView, soulView } from "../../../evolution/soul-api";
import type { toggleEvolution } from "../../../evolution/toggle";
import { jsonObject, timestamp } from "./common";

const entryCounts = z.object({ probation: z.number().int(), active: z.number().int(), stale: z.number().int(), retired: z.number().int() });
const capacitySchema = z.object({ live: z.number().int(), capacity: z.number().int(), over: z.number().int() });

// ---------------------------------------------------------------------------------------------
// AEE rounds (src/evolution/aee-round.ts, aee-view.ts)

const intentSchema = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("run"),
    intent: z.enum(INTENTS),
    strategy: z.enum(EVOLUTION_STRATEGIES),
    strategy_fallback: z.boolean(),
    draw: z.number(),
    drawn: z.enum(INTENTS),
    reason: z.enum(["drawn", "fallback_no_material", "stagnation_bias"]),
    targets: z.array(z.string()),
  }),
  z.object({
    kind: z.literal("skip"),
    reason: z.literal("no_material"),
    strategy: z.enum(EVOLUTION_STRATEGIES),
    strategy_fallback: z.boolean(),
    draw: z.number(),
    drawn: z.enum(INTENTS),
  }),
]) satisfies z.ZodType<Intent>;

const attemptStage = z.enum(["generate", "gate", "measure"]);
const attemptCheck = z.enum([...GATE_ORDER, "commit", "generator"]);

/** One AEE round in the evolution view and the rounds list. */
export const aeeRoundSummarySchema = z.object({
  round_id: z.string(),
  round_seq: z.number().int(),
  status: z.enum(AEE_ROUND_STATUSES),
  step: z.enum(AEE_ROUND_STEPS),
  attempt: z.number().int(),
  intent: intentSchema,
  request_id: z.string().optional(),
  attempts: z.array(z.object({ attempt: z.number().int(), stage: attemptStage, check: attemptCheck, reason: z.string() })),
  verdict: z.object({ verdict: z.enum(["improves", "matches", "rejected"]), reason: z.enum(COMMIT_REASONS) }).optional(),
  approval_id: z.string().optional(),
  end_reason: z.string().optional(),
  created_at: timestamp,
  ended_at: timestamp.optional(),
}) satisfies z.ZodType<ReturnType<typeof roundSummary>>;

const measureVectorSchema = z.object({
  cases: z.object({
    pass_rate: z.number().nullable(),
    passed: z.number().int(),
    failed: z.number().int(),
    unscored: z.number().int(),
    per_case: z.record(z.string(), z.enum(["PASS", "FAIL", "unscored"])),
  }),
  judge: z.number().nullable(),
  judge_status: z.enum(["scored", "not_run", "failed", "invalid"]),
  anti_sycophancy: z.object({ hits: z.array(z.string()) }),
  novelty: z.number().nullable(),
  relevance: z.number().nullable(),
  zeroed: z.object({ reason: z.literal("must_not_in_response"), case_ref: z.string(), phrases: z.array(z.string()) }).nullable(),
}) satisfies z.ZodType<MeasureVector>;

const advisorySchema = z.object({ check: z.enum([...GATE_ORDER, "g_capacity"]), reason: z.string(), detail: z.string() });

const dimComparison = z.object({
  verdict: z.enum(["improves", "matches", "regresses", "unmeasured"]),
  candidate: z.number().nullable(),
  champion: z.number().nullable(),
  diff: z.number().nullable(),
});

const commitVerdictSchema = z.object({
  commit: z.boolean(),
  verdict: z.enum(["improves", "matches", "rejected"]),
  reason: z.enum(COMMIT_REASONS),
  dims: z.object({ cases: dimComparison, judge: dimComparison, heldout: dimComparison }),
  ledger: z.object({ cases_loss: z.number(), judge_loss: z.number() }),
}) satisfies z.ZodType<CommitVerdict>;

const entryChangeSchema = z.object({
  op: z.enum(["add", "update", "retire"]),
  entry_id: z.string(),
  before: playbookEntrySchema.nullable(),
  after: playbookEntrySchema,
});

/** The pure state of an AEE round (src/evolution/aee-round.ts `RoundState`). */
const aeeRoundStateSchema = z.object({
  round_id: z.string(),
  agent_id: z.string(),
  round_seq: z.number().int(),
  started_at: timestamp,
  intent: intentSchema,
  phase: z.enum(["skipped", "awaiting_champion", "awaiting_candidate", "awaiting_measure", "ready_to_commit", "committed", "abandoned"]),
  champion_fingerprint: z.string(),
  champion: measureVectorSchema.nullable(),
  heldout: z.array(z.string()),
  attempts: z.array(
    z.object({
      attempt: z.number().int(),
      stage: attemptStage,
      check: attemptCheck,
      reason: z.string(),
      detail: z.string(),
      targets: z.array(z.string()),
      advisories: z.array(advisorySchema),
    }),
  ),
  /** `delta` is the generator's candidate as it answered it. */
  pending: z.object({ delta: z.unknown(), changes: z.array(entryChangeSchema), advisories: z.array(advisorySchema) }).nullable(),
  accepted: z.object({ delta: z.unknown(), verdict: commitVerdictSchema, measure: measureVectorSchema }).nullable(),
  end_reason: z
    .enum([
      "no_material",
      "attempts_exhausted",
      "champion_moved",
      "merge_refused",
      "generator_unavailable",
      "commit_discarded",
      ...COMMIT_REASONS,
    ])
    .nullable(),
}) satisfies z.ZodType<RoundState>;

const roundPlanSchema = z.object({
  employee_name: z.string(),
  cases: z.array(z.string()),
  runtime: z.enum(RUNTIMES),
  model: z.string(),
  tools: z.object({ allowed_tools: z.array(z.string()).optional(), denied_tools: z.array(z.string()).optional() }),
  model_work: z.object({ runtime: z.enum(RUNTIMES), model: z.string().optional(), set_by: z.enum(["model_work", "employee"]) }),
}) satisfies z.ZodType<RoundPlan>;

/** `GET /v1/employees/:id/playbook/rounds/:round_id`: one round in full, with every job it ran. */
export const aeeRoundDetailSchema = aeeRoundSummarySchema.extend({
  /** The mistake the round digests (the trigger's prediction error report). */
  context: z.string(),
  plan: roundPlanSchema,
  state: aeeRoundStateSchema,
  /** The champion's case results and Measure vector, once taken. */
  champion: jsonObject.nullable(),
  /** The candidate in flight: its delta, Gate result, case results and Measure vector. */
  candidate: jsonObject.nullable(),
  /** The exact diff a commit waiting for approval asked for. */
  commit_plan: jsonObject.optional(),
  jobs: z.array(
    z.object({
      job_id: z.string(),
      purpose: z.enum(AEE_JOB_PURPOSES),
      attempt: z.number().int(),
      case_ref: z.string().optional(),
      status: z.enum(["dispatched", "done"]),
      /** What the job yielded (a case verdict, a judge score, a generator answer). */
      outcome: jsonObject.optional(),
    }),
  ),
});

export const aeeRoundListSchema = z.object({ employee_id: z.string(), rounds: z.array(aeeRoundSummarySchema) });

const stagnationSchema = z.union([
  z.object({
    stagnant: z.literal(false),
    reason: z.enum(["insufficient_rounds", "improving"]),
    window: z.number().int(),
    considered: z.array(z.number().int()),
  }),
  z.object({
    stagnant: z.literal(true),
    reason: z.enum(["all_abandoned", "ties_only", "no_improvement"]),
    window: z.number().int(),
    considered: z.array(z.number().int()),
    abandoned: z.number().int(),
    ties: z.number().int(),
  }),
]) satisfies z.ZodType<Stagnation>;

const rejectionTally = z.object({ count: z.number().int(), reasons: z.record(z.string(), z.number().int()) });

// ---------------------------------------------------------------------------------------------
// The legacy GVU path (src/evolution/gvu-view.ts)

const gvuGenerationSchema = z.object({
  attempt: z.number().int(),
  verdict: z.enum(["approved", "rejected"]),
  /** The verifier layer that refused (`L1`…`L4`), or `generator` when no proposal could be read. */
  layer: z.string().optional(),
  reason: z.string().optional(),
  judge: z
    .union([
      z.object({ approved: z.boolean(), score: z.number(), feedback: z.string() }),
      z.object({ unparseable: z.literal(true), why: z.string().optional() }),
    ])
    .optional(),
  confidence: z.number().optional(),
});

const gvuRoundSchema = z.object({
  round_id: z.string(),
  status: z.enum(GVU_ROUND_STATUSES),
  request_id: z.string(),
  base_version: z.number().int(),
  attempts: z.number().int(),
  max_generations: z.number().int(),
  phase: z.string().optional(),
  pending_job_id: z.string().nullable().optional(),
  generations: z.array(gvuGenerationSchema),
  /** How the round ended (`kind`: applied, abandoned, skipped, discarded, failed) and its particulars. */
  outcome: z.looseObject({ kind: z.string() }).optional(),
  applied_version: z.number().int().optional(),
  approval_id: z.string().optional(),
  created_at: timestamp,
  ended_at: timestamp.optional(),
});

// ---------------------------------------------------------------------------------------------
// `GET /v1/employees/:id/evolution` (src/evolution/view.ts)

export const evolutionViewSchema = z.object({
  employee_id: z.string(),
  /** The effective `[evolution]`: the employee's own keys over the global section. */
  config: evolutionSchema,
  /** The employee's own `[evolution]` keys, as written. */
  own: employeeEvolution.optional(),
  status: z.enum(["enabled", "disabled"]),
  thresholds: z.object({ negligible_upper: z.number(), moderate_upper: z.number(), significant_upper: z.number() }),
  counters: z.object({ predictions: z.number().int(), consecutive_significant: z.number().int() }),
  cooldown: z.object({ until: timestamp.nullable(), active: z.boolean() }),
  last_trigger: z.object({ at: timestamp, kind: z.string().nullable() }).nullable(),
  lock: z.object({ held_by: z.string(), until: timestamp }).nullable(),
  recent_routes: z.array(
    z.object({
      conversation_id: z.string(),
      user_id: z.string(),
      composite_error: z.number(),
      category: z.enum(["negligible", "moderate", "significant", "critical"]),
      action: z.enum(["none", "store_episodic", "trigger_reflection", "trigger_emergency_evolution"]),
      at: timestamp,
    }),
  ),
  recent_requests: z.array(
    z.object({
      request_id: z.string(),
      kind: z.enum(EVOLUTION_REQUEST_KINDS),
      status: z.enum(EVOLUTION_REQUEST_STATUSES),
      reason: z.string().optional(),
      job_id: z.string().optional(),
      created_at: timestamp,
      ended_at: timestamp.optional(),
    }),
  ),
  // The AEE path: the playbook's size, its rounds, the stagnation card, rejections per gate, settle windows.
  playbook: z.object({ revision: z.number().int(), entries: entryCounts, capacity: capacitySchema }),
  rounds: z.array(aeeRoundSummarySchema),
  stagnation: stagnationSchema,
  telemetry: z.object({
    rejections: z.object({
      total: z.number().int(),
      by_gate: z.object(
        Object.fromEntries(REJECTION_GATES.map((g) => [g, rejectionTally])) as Record<
          (typeof REJECTION_GATES)[number],
          typeof rejectionTally
        >,
      ),
    }),
  }),
  /** Settle windows by status (a status with none is absent). */
  settle: z.object(Object.fromEntries(SETTLE_STATUSES.map((s) => [s, z.number().int().optional()]))),
  // The SOUL and the legacy GVU path.
  path: z.enum(["legacy", "aee"]),
  soul: z
    .object({
      version: z.number().int(),
      sha256: z.string(),
      source: z.enum(SOUL_SOURCES).nullable(),
      status: z.enum(SOUL_VERSION_STATUSES).optional(),
      observation_end: timestamp.nullable().optional(),
      read_only_to_employee: z.boolean(),
    })
    .nullable(),
  gvu_rounds: z.array(gvuRoundSchema),
});

/** `POST /v1/employees/:id/evolution/toggle`: the flag as set and the effective section after it. */
export const evolutionToggleSchema = z.object({
  employee_id: z.string(),
  key: z.enum(TOGGLEABLE),
  value: z.boolean(),
  config: evolutionSchema,
}) satisfies z.ZodType<Awaited<ReturnType<typeof toggleEvolution>>>;

// ---------------------------------------------------------------------------------------------
// The SOUL (src/evolution/soul-api.ts)

export const soulSchema = z.object({
  employee_id: z.string(),
  version: z.number().int(),
  sha256: z.string(),
  bytes: z.number().int(),
  content: z.string(),
  source: z.enum(SOUL_SOURCES).nullable(),
  status: z.enum(SOUL_VERSION_STATUSES).nullable(),
  created_at: timestamp.nullable(),
  created_by: z.string().nullable(),
  read_only_to_employee: z.boolean(),
  path: z.enum(["legacy", "aee"]),
}) satisfies z.ZodType<Awaited<ReturnType<typeof soulView>>>;

/** `PUT /v1/employees/:id/soul`: the SOUL after the write, and whether it changed (the same text again does not). */
export const soulPutSchema = soulSchema.extend({ changed: z.boolean() });

const soulVersionShape = {
  version: z.number().int(),
  sha256: z.string(),
  bytes: z.number().int(),
  source: z.enum(SOUL_SOURCES),
  reason: z.string().nullable(),
  parent_version: z.number().int().nullable(),
  created_at: timestamp,
  created_by: z.string(),
  // A GVU version's observation (absent on versions nobody observes: operator, bootstrap, rollback).
  status: z.enum(SOUL_VERSION_STATUSES).optional(),
  round_id: z.string().nullable().optional(),
  observation_end: timestamp.nullable().optional(),
  extensions: z.number().int().optional(),
  /** The metrics the observation compares before and after the version. */
  pre_metrics: jsonObject.nullable().optional(),
  post_metrics: jsonObject.nullable().optional(),
  /** How the observation was decided (verdict, by whom, …). */
  decision: jsonObject.nullable().optional(),
  rollback_diff_encrypted: z.boolean().optional(),
};

export const soulVersionsSchema = z.object({
  employee_id: z.string(),
  current_version: z.number().int().nullable(),
  max_backups: z.number().int(),
  versions: z.array(
    z.object({
      ...soulVersionShape,
      current: z.boolean(),
      /** The version the diff is from (0: from nothing); null when that version was pruned. */
      diff_from: z.number().int().nullable(),
      /** A unified diff from `diff_from` to this version. */
      diff: z.string().nullable(),
    }),
  ),
}) satisfies z.ZodType<Awaited<ReturnType<typeof soulVersionsView>>>;

export const soulVersionSchema = z.object({ employee_id: z.string(), ...soulVersionShape, content: z.string() });

// ---------------------------------------------------------------------------------------------
// The playbook (src/evolution/playbook-ops.ts, gene.ts)

export const playbookSchema = z.object({
  employee_id: z.string(),
  revision: z.number().int(),
  capacity: capacitySchema,
  entries: z.array(playbookEntrySchema),
});

const geneSchema = z.object({
  type: z.literal("Gene"),
  schema_version: z.string(),
  id: z.string(),
  category: playbookEntrySchema.shape.category,
  signals_match: z.array(z.string()),
  summary: z.string(),
  strategy: z.array(z.string()),
  validation: z.array(z.string()),
  preconditions: z.array(z.string()),
  constraints: z.object({}),
  epigenetic_marks: z.array(z.string()),
  learning_history: playbookEntrySchema.shape.failure_history,
  eval_cases: z.array(z.string()),
  assertions: playbookEntrySchema.shape.assertions,
  failure_history: playbookEntrySchema.shape.failure_history,
  applications: z.array(
    z.object({
      type: z.literal("Capsule"),
      gene: z.string(),
      at: timestamp,
      outcome: z.object({ status: z.enum(["success", "failed"]), score: z.number().optional() }),
      conversation_id: z.string().optional(),
    }),
  ),
  success_streak: z.number().int(),
  net_score: z.number(),
  derived_from: playbookEntrySchema.shape.derived_from,
  state: z.enum(ENTRY_STATES),
  version: z.number().int(),
  created_at: timestamp,
  updated_at: timestamp,
});

/** `?format=gep-gene`: the GEP-gene export. */
export const geneExportSchema = z.object({
  format: z.literal("gep-gene"),
  schema_version: z.string(),
  agent_id: z.string(),
  exported_at: timestamp,
  genes: z.array(geneSchema),
}) satisfies z.ZodType<GeneExport>;

/** `GET /v1/employees/:id/playbook`: the entries, or (`?format=gene`) the GEP-gene export. */
export const playbookViewSchema = z.union([playbookSchema, geneExportSchema]);

export const playbookRetireSchema = z.object({ employee_id: z.string(), entry: playbookEntrySchema });

export const migrationDraftSchema = z.object({
  employee_id: z.string(),
  soul: z.object({ version: z.number().int(), sha256: z.string() }),
  drafts: z.array(
    z.object({
      rule: z.string(),
      op: addOpSchema,
      suggested_case: z.object({ ref: z.string(), relevance: z.number() }).nullable(),
      problems: z.array(z.string()),
    }),
  ),
  delta: z.object({ ops: z.array(addOpSchema) }),
  note: z.string(),
}) satisfies z.ZodType<Awaited<ReturnType<typeof draftMigration>>>;

export const migrationAppliedSchema = z.object({
  employee_id: z.string(),
  entries: z.array(playbookEntrySchema),
  settle_due_at: timestamp.nullable(),
});

export const evalScaffoldSchema = z.object({
  employee_id: z.string(),
  soul: z.object({ version: z.number().int(), sha256: z.string() }),
  drafts: z.array(z.object({ rule: z.string(), path: z.string(), toml: z.string(), loads: z.boolean(), load_errors: z.array(z.string()) })),
  note: z.string(),
}) satisfies z.ZodType<Awaited<ReturnType<typeof evalScaffold>>>;
