// How the rest of the Worker reaches the evolution-semaphore Durable Object: its accessor and RPC types.
// The class file itself is imported at runtime by src/workers/index.ts alone (issue 20).
import type { Env } from "../env";

/** The fleet's one semaphore object. */
export function getEvolutionSemaphore(env: Pick<Env, "EVOLUTION_SEMAPHORE">) {
  return env.EVOLUTION_SEMAPHORE.getByName("global");
}
