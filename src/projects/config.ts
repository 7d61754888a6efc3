import { z } from "zod";
import { RUNTIMES } from "../jobs/payloads";
import { defineConfigSection } from "../lib/config";

/** A GitHub organisation login: 1-39 letters, digits and single inner hyphens. */
const githubLogin = z.string().regex(/^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$/, "must be a GitHub organisation login");

/**
 * `projects` config section (official projects, seed 004).
 *
 * - `github_org` is the one organisation official projects live in (the integration token is
 *   confined to it); unset, there is no forge and an active project's repository waits
 *   (`repository.state = "unconfigured"`). The App's credentials are secrets, never config:
 *   GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY, GITHUB_APP_INSTALLATION_ID.
 * - Decomposition runs as a `utility` job on `decomposition_runtime`. The default is the runner's
 *   built-in `offline` runtime, which answers every prompt with labelled text and so can never
 *   decompose: the attempt is recorded as `offline_runtime` and retried with backoff, which an
 *   operator sees on the project. Point it at `claude` (etc.), or submit a decomposition by hand.
 * - Backoff after a failed attempt n (1-based): `decomposition_backoff_ms · 2^(n-1)`, at most
 *   `decomposition_backoff_max_ms`; after `decomposition_max_attempts` the tick stops retrying.
 */
export const projectsConfig = defineConfigSection(
  "projects",
  z.object({
    github_org: githubLogin.optional(),
    decomposition_runtime: z.enum(RUNTIMES).default("offline"),
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
  }),
);
export type ProjectsConfig = z.infer<typeof projectsConfig.schema>;
