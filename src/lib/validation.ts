import * as z from "zod";

// C0/C1 controls, bidi embeddings/overrides/isolates, and line/paragraph separators: they can make a
// name render as something else in a log, a console or a commit trailer.
const UNSAFE_LABEL_CHARS = /[\p{Cc}\u2028\u2029\u202A-\u202E\u2066-\u2069]/u;
// The same for multi-line text, where tab, newline and carriage return are allowed.
const UNSAFE_PROSE_CHARS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069]/u;

function safeText(max: number, unsafe: RegExp) {
  return z
    .string()
    .trim()
    .min(1)
    .max(max)
    .superRefine((value, ctx) => {
      if (!value.isWellFormed()) ctx.addIssue({ code: "custom", message: "must not contain lone surrogates" });
      else if (unsafe.test(value)) ctx.addIssue({ code: "custom", message: "must not contain control characters or bidi overrides" });
    });
}

/**
 * A short human-readable label (a name, a title, a tag): trimmed, 1..max UTF-16 units, and free of
 * control characters, bidi overrides and lone surrogates. Use it for every name-like field.
 */
export function label(max = 100) {
  return safeText(max, UNSAFE_LABEL_CHARS);
}

/**
 * Free text that others read (a proposal, a dialog, a packet's objective): like `label` but line
 * breaks and tabs are allowed; other controls, bidi overrides and lone surrogates are not (they can
 * disguise what a reader sees).
 */
export function prose(max: number) {
  return safeText(max, UNSAFE_PROSE_CHARS);
}
