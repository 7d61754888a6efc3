// How the rest of the Worker reaches the agent-lock Durable Object: its accessor and RPC types.
// The class file itself is imported at runtime by src/workers/index.ts alone (issue 20).
import type { Env } from "../env";

export function getAgentLock(env: Pick<Env, "AGENT_LOCK">, agentId: string) {
  return env.AGENT_LOCK.getByName(agentId);
}
