/**
 * Seed 002 "容量": role members share the live-scaffold limit (`[dispatch] ephemeral_max_active`)
 * with every other ephemeral sub-agent, so a team needs at least max_concurrent × iteration_cap ×
 * roles of it (3 × 5 × 3 = 45 with the defaults, against a default limit of 32). The team path checks
 * the arithmetic when it validates a spec and says so, instead of surfacing it later as a verifier
 * that never ran. A warning, not a refusal (the seed's wording: the path "tells"): members over the
 * limit queue for a slot (TeamAdmission) rather than fail.
 */
export const TEAM_ROLES_IN_CAPACITY = 3;

export interface CapacityShort {
  token: "ephemeral_capacity_short";
  needed: number;
  limit: number;
  detail: string;
}

export function checkTeamCapacity(input: {
  max_concurrent: number;
  iteration_cap: number;
  ephemeral_max_active: number;
}): CapacityShort | null {
  const needed = input.max_concurrent * input.iteration_cap * TEAM_ROLES_IN_CAPACITY;
  if (needed <= input.ephemeral_max_active) return null;
  return {
    token: "ephemeral_capacity_short",
    needed,
    limit: input.ephemeral_max_active,
    detail:
      `a team needs at least max_concurrent × iteration_cap × roles = ${input.max_concurrent} × ${input.iteration_cap} × ` +
      `${TEAM_ROLES_IN_CAPACITY} = ${needed} live scaffolds, and [dispatch] ephemeral_max_active is ${input.ephemeral_max_active}: ` +
      `role members will queue for a slot (and a queued verifier may expire). Raise ephemeral_max_active to at least ${needed}, ` +
      `or lower [goals] max_concurrent or iteration_cap.`,
  };
}
