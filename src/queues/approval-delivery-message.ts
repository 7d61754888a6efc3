import * as z from "zod";
import { APPROVAL_CHANNELS } from "../db/schema/approvals";

/** A message on `approval-deliveries`: send one approval request to one channel. */
export const approvalDeliveryMessage = z.object({
  delivery_id: z.string().regex(/^dlv_[0-9a-f]{16}$/),
  approval_id: z.string().regex(/^apr_[0-9a-f]{16}$/),
  channel: z.enum(APPROVAL_CHANNELS),
});
export type ApprovalDeliveryMessage = z.infer<typeof approvalDeliveryMessage>;
