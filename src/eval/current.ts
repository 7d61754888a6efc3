import { eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { evalMatrix } from "../db/schema";
import { parseMatrix, type RoleModelMatrix } from "./matrix";

/**
 * The matrix the composer and the gate read: the latest measurement that wrote a valid file. A stored
 * file that no longer parses counts as no matrix (a corrupt prior is no prior), and says why.
 */
export async function currentMatrix(
  db: Db,
): Promise<
  | { run_id: string; toml: string; matrix: RoleModelMatrix }
  | { run_id: string; toml: string; refused: { reason: string; path: string; detail: string } }
  | null
> {
  const row = await db.select().from(evalMatrix).where(eq(evalMatrix.id, 1)).get();
  if (!row) return null;
  const parsed = parseMatrix(row.toml);
  return parsed.ok
    ? { run_id: row.runId, toml: row.toml, matrix: parsed.matrix }
    : { run_id: row.runId, toml: row.toml, refused: { reason: parsed.reason, path: parsed.path, detail: parsed.detail } };
}
