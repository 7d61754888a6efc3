import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { respond } from "../../../local-runner/src/runtimes/offline.ts";

describe("offline runtime", () => {
  it("answers the same prompt with the same labelled text every time", () => {
    const prompt = "Summarize the week\nwith details";
    const hash = createHash("sha256").update(prompt).digest("hex").slice(0, 12);
    expect(respond(prompt)).toEqual({ text: `[offline runtime] Summarize the week (sha256:${hash})`, model: "offline" });
    expect(respond(prompt)).toEqual(respond(prompt));
  });

  it("gives different prompts with the same first line different answers", () => {
    expect(respond("Title\nbody one").text).not.toBe(respond("Title\nbody two").text);
  });

  it("uses the first non-empty line, truncated", () => {
    const text = respond(`\n\n   ${"x".repeat(100)}\nsecond`).text;
    expect(text).toMatch(/^\[offline runtime\] x{60}… \(sha256:[0-9a-f]{12}\)$/);
  });
});
