// How the rest of the Worker reaches the team-admission Durable Object: its accessor and RPC types.
// The class file itself is imported at runtime by src/workers/index.ts alone (issue 20).
import type { Env } from "../env";
export type { AdmittedTicket } from "./team-admission";

/** One admission queue for the whole fleet: scaffolds are a host-wide resource. */
export function getTeamAdmission(env: Pick<Env, "TEAM_ADMISSION">, name = "fleet") {
  return env.TEAM_ADMISSION.getByName(name);
}
