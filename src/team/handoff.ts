import type { Db } from "../db/client";
import type { Principal } from "../lib/auth";
import { AppError } from "../lib/errors";
import { TERMINAL_PHASES } from "./composer";
import { isLeg, legName, storePacket } from "./legs";
import { parseMemberScope } from "./member-token";
import type { TaskPacket } from "./packet";
import { findRound, stateOf } from "./round-store";

/**
 * `POST /v1/team/handoff`: a role member stores a packet. Who is storing is known only from the
 * member token's pin (task, round, role, stage), never from the body; the body must agree with the
 * pin, and the slot and path are derived from it. A token with no pin is refused outright: a member
 * identity that could write any task's legs would let one forge another task's planner packets.
 */
export async function handoffPacket(db: Db, principal: Principal, packet: TaskPacket, now: Date) {
  const scope = principal.kind === "member" ? parseMemberScope(principal.scope) : null;
  if (!scope) throw new AppError("forbidden", "This member token is not pinned to a task, round and role");
  if (packet.goal_id !== scope.task_id || packet.round !== scope.round || packet.from_role !== scope.role) {
    throw new AppError("forbidden", `This token may only hand off ${scope.role} packets of task ${scope.task_id} round ${scope.round}`);
  }
  if (!isLeg(packet.from_role, packet.to_role)) {
    throw new AppError("validation_failed", `A ${packet.from_role} cannot hand off to ${packet.to_role}`, {
      errors: [{ path: "packet.to_role", message: `no leg ${legName(packet.from_role, packet.to_role)}` }],
    });
  }
  const row = await findRound(db, scope.round_id);
  if (!row || row.taskId !== scope.task_id || row.roundNo !== scope.round)
    throw new AppError("forbidden", "The token's round does not exist");
  const state = stateOf(row);
  const stage = state.stages.find((s) => s.stage_id === scope.stage_id);
  if (TERMINAL_PHASES.has(state.phase) || stage?.status !== "dispatched") {
    throw new AppError("wrong_phase", `The ${scope.role} stage is not running (round is ${state.phase})`);
  }
  const leg = { taskId: scope.task_id, roundNo: scope.round, from: packet.from_role, to: packet.to_role };
  const stored = await storePacket(db, leg, packet, scope.stage_id, now);
  return { leg: legName(leg.from, leg.to), slot: stored.slot, packet_id: packet.packet_id, path: stored.path };
}
