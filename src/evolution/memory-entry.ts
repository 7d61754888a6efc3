import type { SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { employeeMemory } from "../db/schema";
import { insertWhere } from "../lib/guarded-insert";
import { newId } from "../lib/ids";

/**
 * A memory entry the prediction engine writes (an episodic memory, a reflection), as a statement for
 * the caller's batch, so it lands with what caused it. `importance` is the seed's StoreEpisodic
 * importance; the FTS index follows by trigger, as for every entry.
 */
export function addMemoryStatement(
  db: Db,
  employeeId: string,
  text: string,
  tags: readonly string[],
  importance: number,
  createdBy: string,
  now: Date,
  guard?: SQL,
) {
  const values = {
    id: newId("mem"),
    employeeId,
    text: text.slice(0, 8_000),
    tags: tags.join(" "),
    createdBy,
    createdAt: now.toISOString(),
    importance,
  };
  return guard ? insertWhere(db, employeeMemory, values, guard) : db.insert(employeeMemory).values(values);
}
