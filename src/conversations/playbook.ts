import type { Db } from "../db/client";

/** A playbook entry as a conversation turn's prompt shows it (seed 003 §12.4). */
export interface SelectedEntry {
  entry_id: string;
  category: string;
  content: string;
}

/**
 * The playbook entries selected for one turn (seed 003 §12.4: signal match first, then score). The
 * playbook itself arrives with the evolution rounds; until an employee has entries this selects
 * none, and the prompt carries no playbook block. The turn's prompt builder takes the selection as
 * it is, so the injection point is the same before and after.
 */
export async function selectPlaybookEntries(_db: Db, _employeeId: string, _turnText: string): Promise<SelectedEntry[]> {
  return [];
}
