import * as z from "zod";
import type { Db } from "../db/client";
import { playbookSettleItems } from "../db/schema";
import { findCase } from "../eval/case-job";
import { AppError, notFound } from "../lib/errors";
import { appendEvent } from "../lib/events";
import { newId } from "../lib/ids";
import { findEmployee } from "../tasks/employees";
import { batchOf, suitesOrThrow } from "./aee-context";
import { employeeEvolutionConfig } from "./config";
import { exportGenes } from "./gene";
import { applyDelta, deltaSchema, type MergeResult } from "./playbook-merge";
import { sortEntries } from "./playbook";
import { isPlaybookConflict, loadPlaybook, playbookWrite } from "./playbook-store";
import { migrationDrafts, scaffoldCases, soulRules } from "./playbook-migrate";
import { loadSoul } from "./soul-store";
import { settleItemsFor } from "./settle";
import { capacityReport } from "./sweep";

/**
 * The operator's side of the playbook (issue 23 item 6): read it (or export it as GEP genes), retire an
 * entry, draft entries and eval cases from the SOUL, and apply reviewed drafts. Every change goes
 * through the same delta merge and validation the rounds use, and lands in one guarded write.
 */
const MAX_WRITE_RETRIES = 4;

async function requireEmployee(db: Db, id: string) {
  const employee = await findEmployee(db, id);
  if (!employee) throw notFound(`employee ${id}`);
  return employee;
}

const caseExists = (ref: string) => findCase(suitesOrThrow(), ref) !== undefined;

export async function playbookView(db: Db, employeeId: string, query: { format?: "gene"; state?: string | undefined }, now: Date) {
  await requireEmployee(db, employeeId);
  const stored = await loadPlaybook(db, employeeId);
  if (query.format === "gene") return exportGenes(stored.playbook, now);
  const entries = query.state ? stored.playbook.entries.filter((e) => e.state === query.state) : stored.playbook.entries;
  return {
    employee_id: employeeId,
    revision: stored.revision,
    capacity: capacityReport(stored.playbook.entries),
    entries: sortEntries(entries),
  };
}

/** A merge refusal as a client error: 404 for an unknown entry, 409 for a retired one, else 422 with the token. */
function refusal(merge: Extract<MergeResult, { ok: false }>): AppError {
  if (merge.reason === "unknown_entry") return notFound(merge.detail);
  if (merge.reason === "entry_retired") return new AppError("conflict", merge.detail, { extra: { reason: merge.reason } });
  return new AppError("validation_failed", `the playbook refused the change: ${merge.detail}`, {
    errors: [{ path: merge.index !== undefined ? `ops[${merge.index}]` : "ops", message: merge.detail }],
    extra: {
      reason: merge.reason,
      ...(merge.duplicate ? { duplicate_of: merge.duplicate.entry_id, similarity: merge.duplicate.similarity } : {}),
    },
  });
}

export const retireBody = z.strictObject({ reason: z.string().trim().min(1).max(200) });

/**
 * `POST …/playbook/:entry_id/retire`: the archive, never a delete. A settle window still pending for the
 * entry is then decided `superseded` when it comes due (its entry is no longer the one it watched).
 */
export async function retireEntry(db: Db, employeeId: string, entryId: string, body: z.infer<typeof retireBody>, actor: string, now: Date) {
  await requireEmployee(db, employeeId);
  for (let attempt = 0; attempt < MAX_WRITE_RETRIES; attempt++) {
    const stored = await loadPlaybook(db, employeeId);
    const merge = applyDelta(stored.playbook, { ops: [{ op: "retire", entry_id: entryId, reason: body.reason }] }, { now, caseExists });
    if (!merge.ok) throw refusal(merge);
    const after = merge.changes[0]!.after;
    try {
      await db.batch(
        batchOf([
          ...playbookWrite(db, employeeId, stored.revision, [after], now),
          appendEvent(
            db,
            {
              type: "playbook.entry_retired",
              subject: employeeId,
              payload: { agent_id: employeeId, entry_id: entryId, reason: body.reason, by: actor },
            },
            now,
          ),
        ]),
      );
    } catch (err) {
      if (isPlaybookConflict(err)) continue;
      throw err;
    }
    return { employee_id: employeeId, entry: after };
  }
  throw new AppError("conflict", `the playbook of ${employeeId} kept changing; try again`);
}

async function soulOrThrow(db: Db, employeeId: string) {
  const soul = await loadSoul(db, employeeId);
  if (!soul) throw notFound(`the SOUL of employee ${employeeId}`);
  return soul;
}

/** `POST …/playbook/migrate-soul`: the SOUL's rules as draft add ops, nothing written. */
export async function draftMigration(db: Db, employeeId: string) {
  await requireEmployee(db, employeeId);
  const soul = await soulOrThrow(db, employeeId);
  const rules = soulRules(soul.content);
  const drafts = migrationDrafts(rules, suitesOrThrow(), soul);
  return {
    employee_id: employeeId,
    soul: { version: soul.version, sha256: soul.sha256 },
    drafts,
    // Ready to send to …/migrate-soul/apply once reviewed (only drafts without problems are in it).
    delta: { ops: drafts.filter((d) => d.problems.length === 0).map((d) => d.op) },
    note: "Drafts are not applied. Review them, link an eval case where none was suggested (eval-scaffold drafts some), then POST the delta to migrate-soul/apply.",
  };
}

export const migrationApplyBody = z.strictObject({ delta: deltaSchema });

/**
 * `POST …/playbook/migrate-soul/apply`: reviewed drafts land as probation entries through the same
 * merge (dedup and validation included; a near duplicate is refused and audited). Only additions that
 * name a `soul_migration` lineage are taken here. Each entry gets a settle window like a committed
 * one, judged by its own cases (with no baseline: it holds unless its cases cannot be measured).
 */
export async function applyMigration(db: Db, employeeId: string, body: z.infer<typeof migrationApplyBody>, actor: string, now: Date) {
  const employee = await requireEmployee(db, employeeId);
  const bad = body.delta.ops.findIndex((op) => op.op !== "add" || !op.derived_from.some((l) => l.kind === "soul_migration"));
  if (bad !== -1)
    throw new AppError("validation_failed", "migrate-soul/apply takes additions drafted from the SOUL only", {
      errors: [{ path: `delta.ops[${bad}]`, message: "must be an add with a soul_migration lineage" }],
      extra: { reason: "not_a_migration" },
    });
  const cfg = await employeeEvolutionConfig(db, employee);
  for (let attempt = 0; attempt < MAX_WRITE_RETRIES; attempt++) {
    const stored = await loadPlaybook(db, employeeId);
    const merge = applyDelta(stored.playbook, body.delta, { now, caseExists });
    if (!merge.ok) {
      if (merge.reason === "near_duplicate" && merge.duplicate)
        await db.batch(
          batchOf([
            appendEvent(
              db,
              {
                type: "playbook.dedup_refused",
                subject: employeeId,
                payload: {
                  agent_id: employeeId,
                  source: "soul_migration",
                  index: merge.index ?? null,
                  duplicate_of: merge.duplicate.entry_id,
                  similarity: merge.duplicate.similarity,
                  by: actor,
                },
              },
              now,
            ),
          ]),
        );
      throw refusal(merge);
    }
    const settle = settleItemsFor(merge.changes, [], {
      round_id: `migration:${actor}`.slice(0, 128),
      now,
      settle_hours: cfg.aee_settle_hours,
    });
    try {
      await db.batch(
        batchOf([
          ...playbookWrite(
            db,
            employeeId,
            stored.revision,
            merge.changes.map((c) => c.after),
            now,
          ),
          ...settle.map((item) =>
            db.insert(playbookSettleItems).values({
              id: newId("pst"),
              agentId: employeeId,
              entryId: item.entry_id,
              roundId: item.round_id,
              item: item as unknown as Record<string, unknown>,
              status: "pending",
              dueAt: item.due_at,
              createdAt: now.toISOString(),
            }),
          ),
          appendEvent(
            db,
            {
              type: "playbook.migrated",
              subject: employeeId,
              payload: { agent_id: employeeId, entries: merge.changes.map((c) => c.entry_id), by: actor },
            },
            now,
          ),
        ]),
      );
    } catch (err) {
      if (isPlaybookConflict(err)) continue;
      throw err;
    }
    return { employee_id: employeeId, entries: merge.changes.map((c) => c.after), settle_due_at: settle[0]?.due_at ?? null };
  }
  throw new AppError("conflict", `the playbook of ${employeeId} kept changing; try again`);
}

/** `POST …/eval-scaffold`: eval case drafts (TOML text) for the SOUL's rules; the Worker writes no file. */
export async function evalScaffold(db: Db, employeeId: string) {
  await requireEmployee(db, employeeId);
  const soul = await soulOrThrow(db, employeeId);
  const rules = soulRules(soul.content);
  return {
    employee_id: employeeId,
    soul: { version: soul.version, sha256: soul.sha256 },
    drafts: scaffoldCases(rules, employeeId, soul),
    note: "Drafts only: review each case, replace its placeholder prompt and assertion, and add it under evals/ (and to src/eval/bundled-suites.ts).",
  };
}
