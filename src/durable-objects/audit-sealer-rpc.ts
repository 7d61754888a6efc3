// How the rest of the Worker reaches the audit-sealer Durable Object: its accessor and RPC types.
// The class file itself is imported at runtime by src/workers/index.ts alone (issue 20).
import type { Env } from "../env";

/** The only way to reach the sealer: one object for the whole database (one chain, one writer). */
export function getAuditSealer(env: Pick<Env, "AUDIT_SEALER">) {
  return env.AUDIT_SEALER.getByName("chain");
}
