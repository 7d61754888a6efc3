import { and, asc, eq, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { teamPackets } from "../db/schema";
import { AppError } from "../lib/errors";
import { appendEvent } from "../lib/events";
import { taskPacket, type TaskPacket } from "./packet";
import type { TeamRole } from "./settings";

/** The legs a packet may travel: planner → executor, executor → verifier, verifier → executor (gaps). */
export const LEGS: readonly (readonly [TeamRole, TeamRole])[] = [
  ["planner", "executor"],
  ["executor", "verifier"],
  ["verifier", "executor"],
];

export function isLeg(from: TeamRole, to: TeamRole): boolean {
  return LEGS.some(([f, t]) => f === from && t === to);
}

export interface LegRef {
  taskId: string;
  roundNo: number;
  from: TeamRole;
  to: TeamRole;
}

export const MAX_SLOT = 99;

export function legName(from: TeamRole, to: TeamRole): string {
  return `${from}-to-${to}`;
}

/** Slot 0 is the leg's own name, slots 1..99 its `.01`..`.99` siblings. */
export function slotName(from: TeamRole, to: TeamRole, slot: number): string {
  return slot === 0 ? legName(from, to) : `${legName(from, to)}.${String(slot).padStart(2, "0")}`;
}

/** The path a packet is kept under: derived from (task, round, from_role, to_role, slot), never accepted. */
export function slotPath(leg: LegRef, slot: number): string {
  return `${leg.taskId}/r${leg.roundNo}/${slotName(leg.from, leg.to, slot)}`;
}

function legWhere(leg: LegRef) {
  return and(
    eq(teamPackets.taskId, leg.taskId),
    eq(teamPackets.roundNo, leg.roundNo),
    eq(teamPackets.fromRole, leg.from),
    eq(teamPackets.toRole, leg.to),
  );
}

/**
 * Stores a packet on its leg in one statement. A new packet_id takes the next free slot; the same
 * packet_id overwrites its own slot (a retry after a timeout is idempotent and never duplicates a
 * subtask). D1 runs one statement at a time, so the slot computed inside it cannot be taken twice.
 * A packet_id another stage already used on this leg is refused, as is a 101st packet.
 */
export async function storePacket(
  db: Db,
  leg: LegRef,
  packet: TaskPacket,
  writtenBy: string,
  now: Date,
): Promise<{ slot: number; path: string }> {
  const at = now.toISOString();
  const body = JSON.stringify(packet);
  const sameLeg = sql`task_id = ${leg.taskId} AND round_no = ${leg.roundNo} AND from_role = ${leg.from} AND to_role = ${leg.to}`;
  let rows: { slot: number }[];
  try {
    rows = await db
      .insert(teamPackets)
      .values({
        taskId: leg.taskId,
        roundNo: leg.roundNo,
        fromRole: leg.from,
        toRole: leg.to,
        slot: sql`COALESCE(
          (SELECT slot FROM team_packets WHERE ${sameLeg} AND packet_id = ${packet.packet_id}),
          (SELECT COALESCE(MAX(slot) + 1, 0) FROM team_packets WHERE ${sameLeg}))`,
        packetId: packet.packet_id,
        body,
        writtenBy,
        createdAt: at,
        updatedAt: at,
      })
      .onConflictDoUpdate({
        target: [teamPackets.taskId, teamPackets.roundNo, teamPackets.fromRole, teamPackets.toRole, teamPackets.packetId],
        set: { body, updatedAt: at },
        setWhere: eq(teamPackets.writtenBy, writtenBy),
      })
      .returning({ slot: teamPackets.slot });
  } catch (err) {
    if (causeChainText(err).includes("team_packets_slot_range")) {
      throw new AppError("conflict", `leg ${legName(leg.from, leg.to)} of round ${leg.roundNo} already holds ${MAX_SLOT + 1} packets`);
    }
    throw err;
  }
  const [row] = rows;
  if (!row) throw new AppError("conflict", `packet_id '${packet.packet_id}' is already used on this leg by another member`);
  return { slot: row.slot, path: slotPath(leg, row.slot) };
}

/** Drizzle wraps the D1 error; the constraint's name is in a cause further down. */
export function causeChainText(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++)
    parts.push(String((e as Error).message ?? e));
  return parts.join(" | ");
}

export interface StoredPacketRow {
  slot: number;
  packetId: string;
  body: string;
  writtenBy: string;
  updatedAt: string;
}

export type SkipReason = "unparseable_json" | "schema_invalid" | "leg_mismatch" | "packet_id_mismatch";

export interface LegRead {
  packets: { slot: number; packet: TaskPacket; writtenBy: string; updatedAt: string }[];
  skipped: { slot: number; packet_id: string; reason: SkipReason; detail?: string }[];
  /** Every candidate on the leg was bad: the stage is empty because of corruption, not silence. */
  corrupt: boolean;
}

/**
 * Reads a leg: valid packets in slot order (also their arrival order; names are not trusted). A
 * packet is used only if it parses and its from_role/to_role/goal_id/round match the leg it was read
 * from; anything else is skipped, not guessed at, and one bad packet never costs the rest.
 */
export function readLeg(leg: LegRef, rows: readonly StoredPacketRow[]): LegRead {
  const out: LegRead = { packets: [], skipped: [], corrupt: false };
  for (const row of [...rows].sort((a, b) => a.slot - b.slot)) {
    let json: unknown;
    try {
      json = JSON.parse(row.body);
    } catch {
      out.skipped.push({ slot: row.slot, packet_id: row.packetId, reason: "unparseable_json" });
      continue;
    }
    const parsed = taskPacket.safeParse(json);
    if (!parsed.success) {
      const detail = parsed.error.issues
        .slice(0, 3)
        .map((i) => `${i.path.join(".")}: ${i.message}`)
        .join("; ");
      out.skipped.push({ slot: row.slot, packet_id: row.packetId, reason: "schema_invalid", detail });
      continue;
    }
    const p = parsed.data;
    if (p.from_role !== leg.from || p.to_role !== leg.to || p.goal_id !== leg.taskId || p.round !== leg.roundNo) {
      out.skipped.push({
        slot: row.slot,
        packet_id: row.packetId,
        reason: "leg_mismatch",
        detail: `packet says ${p.from_role}→${p.to_role} of ${p.goal_id} round ${p.round}`,
      });
      continue;
    }
    if (p.packet_id !== row.packetId) {
      out.skipped.push({ slot: row.slot, packet_id: row.packetId, reason: "packet_id_mismatch" });
      continue;
    }
    out.packets.push({ slot: row.slot, packet: p, writtenBy: row.writtenBy, updatedAt: row.updatedAt });
  }
  out.corrupt = rows.length > 0 && out.packets.length === 0;
  return out;
}

/** Loads and reads a leg, leaving an audit row per skipped packet and one when the leg is corrupt. */
export async function loadLeg(db: Db, leg: LegRef, now: Date): Promise<LegRead> {
  const rows = await db
    .select({
      slot: teamPackets.slot,
      packetId: teamPackets.packetId,
      body: teamPackets.body,
      writtenBy: teamPackets.writtenBy,
      updatedAt: teamPackets.updatedAt,
    })
    .from(teamPackets)
    .where(legWhere(leg))
    .orderBy(asc(teamPackets.slot))
    .all();
  const read = readLeg(leg, rows);
  const name = legName(leg.from, leg.to);
  const audits: BatchItem<"sqlite">[] = read.skipped.map((s) => {
    const version = rows.find((r) => r.slot === s.slot)?.updatedAt ?? "";
    return appendEvent(
      db,
      {
        type: "team_packet_skipped",
        subject: leg.taskId,
        payload: {
          task_id: leg.taskId,
          round: leg.roundNo,
          leg: name,
          slot: s.slot,
          path: slotPath(leg, s.slot),
          packet_id: s.packet_id,
          reason: s.reason,
          ...(s.detail ? { detail: s.detail } : {}),
        },
        // One row per bad version of a slot, however often the leg is read.
        dedupeKey: `team_packet_skipped:${slotPath(leg, s.slot)}:${version}`,
      },
      now,
    );
  });
  if (read.corrupt) {
    audits.push(
      appendEvent(
        db,
        {
          type: "team_leg_corrupt",
          subject: leg.taskId,
          payload: { task_id: leg.taskId, round: leg.roundNo, leg: name, candidates: rows.length },
          dedupeKey: `team_leg_corrupt:${leg.taskId}/r${leg.roundNo}/${name}:${rows.map((r) => r.updatedAt).join(",")}`,
        },
        now,
      ),
    );
  }
  if (audits.length > 0) await db.batch(audits as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  return read;
}

/** Rewrites a stored packet's body (the composer correcting a claimed fidelity), only if unchanged since read. */
export function rewritePacket(db: Db, leg: LegRef, slot: number, packet: TaskPacket, expectedUpdatedAt: string, now: Date) {
  return db
    .update(teamPackets)
    .set({ body: JSON.stringify(packet), updatedAt: now.toISOString() })
    .where(and(legWhere(leg), eq(teamPackets.slot, slot), eq(teamPackets.updatedAt, expectedUpdatedAt)));
}
