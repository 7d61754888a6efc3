import type { Db } from "../db/client";
import { liveRuntimes } from "../jobs/runner-runtimes";
import type { MatrixAdvice } from "../team/goals";
import { RUNTIME_FAMILY, TEAM_RUNTIMES, type TeamRuntime } from "../team/catalog";
import { currentMatrix } from "./current";
import { MATRIX_ROLES, type MatrixRole } from "./design";
import { capabilityGap, matrixPrior } from "./prior";

/**
 * The capability matrix as advice for a goal's team (issue 22 part 5): the composer's prior under the
 * seed's narrowing conditions — the pure ones in prior.ts, plus the host's: a runtime no live runner
 * offers is skipped — and the gate's capability gap. No matrix (or one that no longer parses) → no
 * advice at all, so the team is chosen exactly as before the matrix existed.
 */
export async function matrixAdvice(db: Db, now: Date): Promise<MatrixAdvice | undefined> {
  const current = await currentMatrix(db);
  if (!current || !("matrix" in current)) return undefined;
  const { matrix } = current;
  const onHost = await liveRuntimes(db, now);
  const isTeamRuntime = (r: string): r is TeamRuntime => (TEAM_RUNTIMES as readonly string[]).includes(r);
  const isMatrixRole = (r: string): r is MatrixRole => (MATRIX_ROLES as readonly string[]).includes(r);
  return {
    prior: (role, runtime) => {
      if (!isMatrixRole(role) || !isTeamRuntime(runtime) || !onHost.has(runtime)) return null;
      const prior = matrixPrior(matrix, role, runtime, RUNTIME_FAMILY[runtime]);
      return prior.ok ? prior.model : null;
    },
    gap: (role, runtime, model) => (isTeamRuntime(runtime) ? capabilityGap(matrix, role, runtime, model) : null),
  };
}
