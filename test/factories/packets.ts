import type { TaskPacket } from "../../src/team/packet";
import type { TeamRole } from "../../src/team/settings";

/** A valid packet for a leg; override any field. */
export function packet(goalId: string, round: number, from: TeamRole, to: TeamRole, overrides: Record<string, unknown> = {}) {
  return {
    packet_id: `p-${Math.random().toString(36).slice(2, 10)}`,
    goal_id: goalId,
    round,
    from_role: from,
    to_role: to,
    objective: "Write notes/a.md summarising the onboarding flow",
    constraints: ["Do not touch billing code"],
    audience: ["ops-team"],
    ...overrides,
  } as TaskPacket & Record<string, unknown>;
}
