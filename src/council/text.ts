import { z } from "zod";

// Controls other than tab, newline and carriage return; bidi embeddings, overrides and isolates.
const UNSAFE_TEXT_CHARS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/u;

/**
 * Free text that ends up in the public trail (a proposal body, a dialog): line breaks allowed, but no
 * other control characters, bidi overrides or lone surrogates (they can disguise what a reader sees).
 */
export function longText(max: number) {
  return z
    .string()
    .trim()
    .min(1)
    .max(max)
    .superRefine((value, ctx) => {
      if (!value.isWellFormed()) ctx.addIssue({ code: "custom", message: "must not contain lone surrogates" });
      else if (UNSAFE_TEXT_CHARS.test(value))
        ctx.addIssue({ code: "custom", message: "must not contain control characters or bidi overrides" });
    });
}
