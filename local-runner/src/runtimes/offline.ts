/**
 * The built-in runtime: no model, no child process. Its answer is a pure function of the prompt so
 * end-to-end tests can predict it, and it is labelled so nobody mistakes it for a model's answer.
 */
import { createHash } from "node:crypto";

export const OFFLINE_MODEL = "offline";
const FIRST_LINE_LIMIT = 60;

export function respond(prompt: string): { text: string; model: string } {
  const hash = createHash("sha256").update(prompt, "utf8").digest("hex").slice(0, 12);
  const firstLine =
    prompt
      .split("\n")
      .map((line) => line.trim())
      .find((line) => line.length > 0) ?? "";
  const summary = firstLine.length > FIRST_LINE_LIMIT ? `${firstLine.slice(0, FIRST_LINE_LIMIT)}…` : firstLine;
  return { text: `[offline runtime] ${summary} (sha256:${hash})`, model: OFFLINE_MODEL };
}
