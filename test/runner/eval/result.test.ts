/**
 * An eval case's result, pure: unknown stays absent, and the 480 KiB budget takes file contents
 * first (levelled, each cut one named), then the end of the text.
 */
import { describe, expect, it } from "vitest";
import { EVAL_RESULT_BYTES, buildEvalResult } from "../../../local-runner/src/eval/result.ts";
import type { EvalObservation } from "../../../local-runner/src/eval/result.ts";

const KIB = 1024;
const size = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

function observation(patch: Partial<EvalObservation> = {}): EvalObservation {
  return {
    runtime: "codex",
    cli: "codex",
    stream: { text: "Done." },
    durationMs: 42,
    exitStatus: 0,
    nativeEvents: [],
    observed: { files: {}, truncated: [], unreadable: [] },
    ...patch,
  };
}

describe("buildEvalResult", () => {
  it("leaves out what nobody reported and keeps a measured exit status of 0", () => {
    expect(buildEvalResult(observation({ stream: { text: "Done.", usage: {} } }))).toEqual({
      text: "Done.",
      runtime: "codex",
      provider: "openai",
      duration_ms: 42,
      exit_status: 0,
      files: {},
      evidence: { native_tool_events: 0 },
      tool_activity: [],
    });
  });

  it("carries the stream's own facts, the effort mapping and the file lists when they have entries", () => {
    const result = buildEvalResult(
      observation({
        runtime: "claude",
        cli: "claude",
        stream: { text: "ok", model: "m", sessionId: "s", usage: { output_tokens: 3 }, costUsd: 0, messageRecovered: true },
        effort: { requested: "high", applied: "high" },
        nativeEvents: [{ tool: "Write", status: "ok" }],
        observed: { files: { "a.md": "x", "b.md": null }, truncated: ["a.md"], unreadable: ["b.md"] },
      }),
    );
    expect(result).toMatchObject({
      model: "m",
      provider: "anthropic",
      session_id: "s",
      usage: { output_tokens: 3 },
      cost_usd: 0,
      message_recovered_from_stream: true,
      effort: { requested: "high", applied: "high" },
      files: { "a.md": "x", "b.md": null },
      truncated_files: ["a.md"],
      unreadable_files: ["b.md"],
      evidence: { native_tool_events: 1 },
      tool_activity: [{ name: "Write", ok: 1, err: 0 }],
    });
  });

  it("levels file contents down to fit 480 KiB, names each file it cut, and keeps the small ones and the text whole", () => {
    const files: Record<string, string | null> = { "small.md": "tiny", "gone.md": null };
    for (let i = 0; i < 12; i += 1) files[`big-${i}.txt`] = String(i % 10).repeat(64 * KIB);
    const result = buildEvalResult(
      observation({ stream: { text: "t".repeat(10_000) }, observed: { files, truncated: ["big-0.txt"], unreadable: [] } }),
    );
    expect(size(result)).toBeLessThanOrEqual(EVAL_RESULT_BYTES);
    expect(size(result)).toBeGreaterThan(EVAL_RESULT_BYTES - 1024);
    expect(result.text).toHaveLength(10_000);
    expect(result.files["small.md"]).toBe("tiny");
    expect(result.files["gone.md"]).toBeNull();
    const cut = Object.keys(files).filter((p) => p.startsWith("big-"));
    expect(result.truncated_files).toEqual(cut);
    const lengths = new Set(cut.map((p) => result.files[p]!.length));
    expect(lengths.size).toBe(1);
    expect(result.files["big-3.txt"]).toMatch(/^3+$/);
  });

  it("cuts the text only once no file content is left to cut", () => {
    const result = buildEvalResult(
      observation({
        stream: { text: "€".repeat(300_000) },
        observed: { files: { "a.md": "a".repeat(64 * KIB) }, truncated: [], unreadable: [] },
      }),
    );
    expect(size(result)).toBeLessThanOrEqual(EVAL_RESULT_BYTES);
    expect(result.files["a.md"]).toBe("");
    expect(result.truncated_files).toEqual(["a.md"]);
    expect(result.text.length).toBeLessThan(200_000);
    expect(result.text.endsWith("…")).toBe(true);
  });

  it("caps the text at the Worker's 200,000 characters even when it would fit", () => {
    const result = buildEvalResult(observation({ stream: { text: "x".repeat(250_000) } }));
    expect(result.text).toHaveLength(200_000);
  });
});
