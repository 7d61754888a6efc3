import * as z from "zod";
import type { GeneExport } from "../../../evolution/gene";
import { ASSERTION_KINDS, ENTRY_STATES, LINEAGE_KINDS, PLAYBOOK_CATEGORIES } from "../../../evolution/playbook";
import { timestamp } from "./common";

const failureNote = z.object({
  at: timestamp,
  round_id: z.string().optional(),
  reason: z.string(),
  detail: z.string(),
});

const capsule = z.object({
  type: z.literal("Capsule"),
  gene: z.string(),
  at: timestamp,
  outcome: z.object({ status: z.enum(["success", "failed"]), score: z.number().optional() }),
  conversation_id: z.string().optional(),
});

const gene = z.object({
  type: z.literal("Gene"),
  schema_version: z.string(),
  id: z.string(),
  category: z.enum(PLAYBOOK_CATEGORIES),
  signals_match: z.array(z.string()),
  summary: z.string(),
  strategy: z.array(z.string()),
  validation: z.array(z.string()),
  preconditions: z.array(z.string()),
  constraints: z.object({}),
  epigenetic_marks: z.array(z.string()),
  learning_history: z.array(failureNote),
  eval_cases: z.array(z.string()),
  assertions: z.array(z.object({ kind: z.enum(ASSERTION_KINDS), value: z.string() })),
  failure_history: z.array(failureNote),
  applications: z.array(capsule),
  success_streak: z.number().int(),
  net_score: z.number(),
  derived_from: z.array(z.object({ kind: z.enum(LINEAGE_KINDS), id: z.string() })),
  state: z.enum(ENTRY_STATES),
  version: z.number().int(),
  created_at: timestamp,
  updated_at: timestamp,
});

/** The playbook as GEP genes (`exportGenes`), as `GET /console/employees/:id/playbook/export` downloads it. */
export const geneExportSchema = z.object({
  format: z.literal("gep-gene"),
  schema_version: z.string(),
  agent_id: z.string(),
  exported_at: timestamp,
  genes: z.array(gene),
}) satisfies z.ZodType<GeneExport>;
