// How the rest of the Worker reaches the council-session Durable Object: its accessor and RPC types.
// The class file itself is imported at runtime by src/workers/index.ts alone (issue 20).
import type { Env } from "../env";

export function getCouncilSession(env: Pick<Env, "COUNCIL_SESSION">, sessionId: string) {
  return env.COUNCIL_SESSION.getByName(sessionId);
}
