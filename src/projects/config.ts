import * as z from "zod";
import type { Db } from "../db/client";
import { modelWorkConfig, needsOffered, resolveStage, type ModelWork, type StagePlan } from "../jobs/model-work";
import { RUNTIMES, type Runtime } from "../jobs/payloads";
import { liveRuntimes } from "../jobs/runner-runtimes";
import { defineConfigSection, readSection } from "../lib/config";

/** A GitHub organisation login: 1-39 letters, digits and single inner hyphens. */
const githubLogin = z.string().regex(/^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$/, "must be a GitHub organisation login");

/**
 * `projects` config section (official projects, seed 004).
 *
 * - `github_org` is the one organisation official projects live in (the integration token is
 *   confined to it); unset, there is no forge and an active project's repository waits
 *   (`repository.state = "unconfigured"`). The App's credentials are secrets, never config:
 *   GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY, GITHUB_APP_INSTALLATION_ID.
 * - Decomposition runs as a `utility` job on `decomposition_runtime`. Unset (no zod default), it
 *   follows the `model_work` section (`effectiveProjectsConfig`, below); with that unset too it is
 *   the runner's built-in `offline` runtime, which answers every prompt with labelled text and so can
 *   never decompose: the attempt is recorded as `offline_runtime` and retried with backoff, which an
 *   operator sees on the project. Set `model_work` (or this key) to `claude` (etc.), or submit a
 *   decomposition by hand.
 * - Backoff after a failed attempt n (1-based): `decomposition_backoff_ms · 2^(n-1)`, at most
 *   `decomposition_backoff_max_ms`; after `decomposition_max_attempts` the tick stops retrying.
 */
const projectsSchema = z.object({
  github_org: githubLogin.optional(),
  decomposition_runtime: z.enum(RUNTIMES).optional(),
  decomposition_model: z.string().min(1).max(200).optional(),
  decomposition_timeout_ms: z.number().int().min(10_000).max(3_600_000).default(600_000),
  decomposition_max_attempts: z.number().int().min(1).max(50).default(6),
  decomposition_backoff_ms: z.number().int().min(1_000).max(86_400_000).default(60_000),
  decomposition_backoff_max_ms: z
    .number()
    .int()
    .min(1_000)
    .max(7 * 86_400_000)
    .default(6 * 3_600_000),
  /** Swarm tasks of a decomposition expire after this many days (council tasks: 90, seed 004). */
  task_expiry_days: z.number().int().min(1).max(365).default(90),
  /** A claim lapses after this long without completion; the task is claimable again. */
  claim_ttl_hours: z
    .number()
    .int()
    .min(1)
    .max(24 * 90)
    .default(72),
  /** Claiming a swarm task takes the standing a community vote takes (seed 004: reputation ≥ 20). */
  claim_min_reputation: z.number().min(0).max(100).default(20),
  /**
   * The newcomer's way in: below `claim_min_reputation`, a node at or above this may claim project
   * tasks (whose completion is checkable: a recorded contribution commit), holding
   * `newcomer_max_claims` at a time. The default is the initial reputation (10).
   */
  project_claim_min_reputation: z.number().min(0).max(100).default(10),
  newcomer_max_claims: z.number().int().min(0).max(10).default(1),
  /** The holding limit: unfinished claims a node may hold at once. */
  max_claims: z.number().int().min(1).max(50).default(3),
  /**
   * Dispatch of council tasks (an approved general proposal's): each eligible node in turn gets a
   * `swarm_task_offer` and `offer_window_minutes` in which only it may claim; after `max_offers`
   * offers, or when no eligible node is left, the task is open to every node that may claim.
   * Eligible: not suspended, reputation ≥ `claim_min_reputation`, tier ≥ `offer_min_tier`, a
   * heartbeat within `offer_heartbeat_hours`, fewer than `max_claims` claims held, not offered it before.
   */
  offer_window_minutes: z
    .number()
    .int()
    .min(1)
    .max(7 * 24 * 60)
    .default(30),
  max_offers: z.number().int().min(0).max(50).default(3),
  offer_min_tier: z.number().int().min(0).max(5).default(1),
  offer_heartbeat_hours: z
    .number()
    .int()
    .min(1)
    .max(24 * 30)
    .default(48),
  /** Contributions: files per commit, bytes per file and per commit (decoded content). */
  max_contribution_files: z.number().int().min(1).max(100).default(50),
  max_file_bytes: z.number().int().min(1).max(1_048_576).default(262_144),
  max_contribution_bytes: z.number().int().min(1).max(1_048_576).default(786_432),
});
/**
 * The section as stored (`decomposition_runtime` absent unless written). Every other feature reads
 * it as is; only the decomposition reads it resolved (`EffectiveProjectsConfig`).
 */
export type ProjectsConfig = z.infer<typeof projectsSchema>;
export const projectsConfig = defineConfigSection("projects", projectsSchema, { present: presentProjects });

/** What decomposes when neither `decomposition_runtime` nor `model_work` is set (today's default). */
export const DECOMPOSITION_DEFAULT_RUNTIME: Runtime = "offline";

export type EffectiveProjectsConfig = ProjectsConfig & { decomposition_runtime: Runtime; decomposition: StagePlan };

/**
 * The projects section as the decomposition applies it (pure). `decomposition_runtime` written by
 * the operator wins; unset, `model_work`'s runtime while a live runner offers it; when none does, the
 * decomposition runs as it would without `model_work` (on `offline`, retried with backoff) and its
 * plan says `runtime_not_offered`; with `model_work` unset, `offline` as before.
 */
export function effectiveProjectsConfig(projects: ProjectsConfig, work: ModelWork, offered: ReadonlySet<string>): EffectiveProjectsConfig {
  const stage = resolveStage(
    // The runtime is the stage's whole setting: written, it is an explicit choice not second-guessed.
    {
      mode: projects.decomposition_runtime ? "model" : undefined,
      runtime: projects.decomposition_runtime,
      model: projects.decomposition_model,
    },
    { mode: "model", runtime: DECOMPOSITION_DEFAULT_RUNTIME },
    work,
    offered,
  );
  const { decomposition_model: _m, ...rest } = projects;
  if (stage.mode === "off") {
    return {
      ...rest,
      decomposition_runtime: DECOMPOSITION_DEFAULT_RUNTIME,
      decomposition: { ...stage.plan, runtime: DECOMPOSITION_DEFAULT_RUNTIME },
    };
  }
  return {
    ...rest,
    decomposition_runtime: stage.runtime,
    ...(stage.model ? { decomposition_model: stage.model } : {}),
    decomposition: stage.plan,
  };
}

/** The effective projects config now (the live runtimes are read only when `model_work` is set). */
export async function readProjectsConfig(db: Db, now: Date): Promise<EffectiveProjectsConfig> {
  const [projects, work] = await Promise.all([readSection(db, projectsConfig), readSection(db, modelWorkConfig)]);
  return effectiveProjectsConfig(projects, work, needsOffered(work) ? await liveRuntimes(db, now) : new Set());
}

/** What `GET /v1/config/projects` shows: the effective values, what was stored, and how the decomposition is decided now. */
async function presentProjects(db: Db, stored: ProjectsConfig, now: Date): Promise<Record<string, unknown>> {
  const work = await readSection(db, modelWorkConfig);
  const { decomposition, ...effective } = effectiveProjectsConfig(
    stored,
    work,
    needsOffered(work) ? await liveRuntimes(db, now) : new Set(),
  );
  return { ...effective, stored, stages: { decomposition } };
}
