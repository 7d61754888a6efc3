import * as z from "zod";
import { defineConfigSection } from "../lib/config";

/** `[conversations]`: how long a quiet conversation stays open, and the employee's reply limits. */
export const conversationsConfig = defineConfigSection(
  "conversations",
  z.object({
    /** A conversation with no turn for this long is closed by the `conversations` tick. */
    idle_minutes: z.number().int().min(1).max(10_080).default(30),
    /** The runner's limit for one reply (an `employee_turn` job). */
    reply_timeout_ms: z
      .number()
      .int()
      .min(1_000)
      .max(3_600_000)
      .default(10 * 60_000),
    /** Turns of the conversation the employee is shown with each new message (older ones are cut first). */
    history_turns: z.number().int().min(0).max(200).default(40),
  }),
);
