import type { Db } from "../db/client";
import type { EmployeeRow } from "../db/schema";
import { readSection } from "../lib/config";
import { utf8Bytes } from "../jobs/limits";
import type { SoulForRun } from "../jobs/payloads";
import { effectiveEvolution, evolutionConfig, type EvolutionConfig } from "./config";
import { loadSoul } from "./soul-store";

/**
 * Seed 003 §12.2: SOUL.md is read-only to the employee and its members on the AEE path; only the
 * legacy path (`legacy_soul_evolution`) or an explicit `can_modify_own_soul` leaves it writable.
 */
export function soulReadOnly(cfg: Pick<EvolutionConfig, "legacy_soul_evolution" | "can_modify_own_soul">): boolean {
  return !gvuMayWriteSoul(cfg);
}

/**
 * Whether the GVU updater may write the employee's SOUL (issue 23 item 1): only on the legacy path,
 * or where an operator set `can_modify_own_soul`. Checked again at every step and at apply time, so
 * switching `legacy_soul_evolution` off stops a round in flight and discards a change awaiting approval.
 */
export function gvuMayWriteSoul(cfg: Pick<EvolutionConfig, "legacy_soul_evolution" | "can_modify_own_soul">): boolean {
  return cfg.legacy_soul_evolution || cfg.can_modify_own_soul;
}

/**
 * The SOUL an employee run carries (issue 23 item 1): the current version, the head's fingerprint
 * (never one computed from anything the runner holds) and whether the run may write it. Undefined
 * only when the employee has no SOUL at all (it is gone); the runner then renders its old identity.
 */
export async function soulForEmployeeRun(db: Db, employee: Pick<EmployeeRow, "id" | "config">): Promise<SoulForRun | undefined> {
  const [soul, global] = await Promise.all([loadSoul(db, employee.id), readSection(db, evolutionConfig)]);
  if (!soul) return undefined;
  const cfg = effectiveEvolution(global, employee.config?.evolution);
  return { version: soul.version, content: soul.content, sha256: soul.sha256, read_only: soulReadOnly(cfg) };
}

/**
 * A run's whole payload travels in its dispatch message (a Queue message is at most 128 KB). A SOUL
 * near its 50 KB cap beside a prompt near its 64 KiB one could pass that, and a message the queue
 * refuses would be re-dispatched forever; such a run goes without the SOUL (the runner renders the
 * employee's name as its identity, as before SOUL versions), and says so in the log.
 */
export const MAX_RUN_PAYLOAD_BYTES = 120 * 1024;

export function withSoul<P extends Record<string, unknown>>(payload: P, soul: SoulForRun | undefined): P & { soul?: SoulForRun } {
  if (!soul) return payload;
  const full = { ...payload, soul };
  if (utf8Bytes(JSON.stringify(full)) <= MAX_RUN_PAYLOAD_BYTES) return full;
  console.warn(
    `soul: a run of ${String(payload.employee_id)} goes without SOUL v${soul.version} (the payload would pass ${MAX_RUN_PAYLOAD_BYTES} bytes)`,
  );
  return payload;
}
