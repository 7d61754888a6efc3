import { netScore, sortEntries, type Playbook, type PlaybookEntry } from "./playbook";

/**
 * GEP-gene JSON export (seed 003 §12.7 `playbook export`, `GET /v1/employees/:id/playbook?format=gene`).
 * Only the JSON shape of EvoMap/evolver's Gene and Capsule objects is followed (the seed: the schema
 * concept is referenced, no code is vendored): `type: "Gene"`, `id`, `category`, `signals_match`,
 * `summary`, `strategy`, `validation`, `learning_history`, `epigenetic_marks`, with the playbook's own
 * fields kept under their seed names. Applications travel as Capsule-shaped records. A local file
 * format: nothing here talks to a hub.
 */
export const GENE_SCHEMA_VERSION = "1.6.0";

export interface GeneCapsule {
  type: "Capsule";
  gene: string;
  at: string;
  outcome: { status: "success" | "failed"; score?: number };
  conversation_id?: string;
}

export interface Gene {
  type: "Gene";
  schema_version: string;
  id: string;
  category: PlaybookEntry["category"];
  signals_match: string[];
  summary: string;
  /** The entry's content is its one strategy step (the playbook keeps rules compact, §12.3). */
  strategy: string[];
  /** The linked eval cases, as `eval:<domain>/<case_id>` validation steps. */
  validation: string[];
  preconditions: string[];
  constraints: Record<string, never>;
  epigenetic_marks: string[];
  learning_history: PlaybookEntry["failure_history"];
  eval_cases: string[];
  assertions: PlaybookEntry["assertions"];
  failure_history: PlaybookEntry["failure_history"];
  applications: GeneCapsule[];
  success_streak: number;
  net_score: number;
  derived_from: PlaybookEntry["derived_from"];
  state: PlaybookEntry["state"];
  version: number;
  created_at: string;
  updated_at: string;
}

export interface GeneExport {
  format: "gep-gene";
  schema_version: string;
  agent_id: string;
  exported_at: string;
  genes: Gene[];
}

export function toGene(e: PlaybookEntry): Gene {
  return {
    type: "Gene",
    schema_version: GENE_SCHEMA_VERSION,
    id: e.entry_id,
    category: e.category,
    signals_match: [...e.signals_match],
    summary: e.content,
    strategy: [e.content],
    validation: e.eval_cases.map((c) => `eval:${c}`),
    preconditions: [],
    constraints: {},
    epigenetic_marks: [`state:${e.state}`, ...(e.state_reason ? [`state_reason:${e.state_reason}`] : [])],
    learning_history: e.failure_history,
    eval_cases: [...e.eval_cases],
    assertions: e.assertions,
    failure_history: e.failure_history,
    applications: e.applications.map((a) => ({
      type: "Capsule",
      gene: e.entry_id,
      at: a.at,
      outcome: { status: a.outcome, ...(a.score !== undefined ? { score: a.score } : {}) },
      ...(a.conversation_id ? { conversation_id: a.conversation_id } : {}),
    })),
    success_streak: e.success_streak,
    net_score: netScore(e),
    derived_from: e.derived_from,
    state: e.state,
    version: e.version,
    created_at: e.created_at,
    updated_at: e.updated_at,
  };
}

/** Every entry of the playbook (all states: retired ones are the archive), in id order. */
export function exportGenes(pb: Playbook, now: Date): GeneExport {
  return {
    format: "gep-gene",
    schema_version: GENE_SCHEMA_VERSION,
    agent_id: pb.agent_id,
    exported_at: now.toISOString(),
    genes: sortEntries(pb.entries).map(toGene),
  };
}
