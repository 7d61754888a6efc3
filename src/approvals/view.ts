import type { ApprovalRow } from "../db/schema";

/** An approval as the API shows it; decision fields appear only once a person decided. */
export function approvalView(row: ApprovalRow) {
  return {
    approval_id: row.id,
    action_kind: row.actionKind,
    subject: row.subject,
    params: row.params,
    action_hash: row.actionHash,
    evidence: row.evidence,
    status: row.status,
    requested_by: row.requestedBy,
    requested_at: row.requestedAt,
    expires_at: row.expiresAt,
    channels: row.channels,
    ...(row.decidedBy ? { decided_by: row.decidedBy, decided_via: row.decidedVia } : {}),
    ...(row.decidedAt && (row.status === "approved" || row.status === "denied") ? { decided_at: row.decidedAt } : {}),
    ...(row.note ? { note: row.note } : {}),
    ...(row.consumedAt ? { consumed_at: row.consumedAt, consumed_by: row.consumedBy } : {}),
  };
}
export type ApprovalView = ReturnType<typeof approvalView>;
