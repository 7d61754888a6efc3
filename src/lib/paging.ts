import { z } from "zod";

/** `limit` (default 50, max 500) and an opaque `cursor`, shared by every list endpoint. */
export const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: z.string().regex(/^\d+$/, "cursor must come from a previous next_cursor").optional(),
});
