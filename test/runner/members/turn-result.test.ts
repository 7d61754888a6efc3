import { describe, expect, it } from "vitest";
import { buildTurnResult, TURN_RESULT_BYTES, TURN_TEXT_LIMIT } from "../../../local-runner/src/members/turn-result.ts";
import type { TurnObservation } from "../../../local-runner/src/members/turn-result.ts";

const workspace = {
  artifact_receipts: [],
  workspace: { scan: "full" as const, created: 0, modified: 0, deleted: 0, truncated: false, changes: [] },
};
const observation = (o: Partial<TurnObservation> = {}): TurnObservation => ({
  runtime: "codex",
  cli: "codex",
  stream: { text: "done" },
  durationMs: 12,
  nativeEvents: [],
  workspace,
  ...o,
});

describe("buildTurnResult", () => {
  it("leaves out what nobody reported: no model, usage, cost or session; provider from the CLI", () => {
    const result = buildTurnResult(observation({ stream: { text: "done", usage: {} } }));
    expect(result).toEqual({
      text: "done",
      runtime: "codex",
      provider: "openai",
      duration_ms: 12,
      ...workspace,
      evidence: { native_tool_events: 0 },
      tool_activity: [],
    });
  });

  it("counts native tool events and totals them per tool", () => {
    const result = buildTurnResult(
      observation({
        nativeEvents: [
          { tool: "Write", status: "ok" },
          { tool: "Write", status: "error" },
          { tool: "Bash", status: "ok" },
        ],
        stream: { text: "x", model: "m", sessionId: "s", usage: { output_tokens: 3 }, costUsd: 0, messageRecovered: true },
      }),
    );
    expect(result).toMatchObject({
      model: "m",
      session_id: "s",
      usage: { output_tokens: 3 },
      cost_usd: 0,
      message_recovered_from_stream: true,
      evidence: { native_tool_events: 3 },
      tool_activity: [
        { name: "Bash", ok: 1, err: 0 },
        { name: "Write", ok: 1, err: 1 },
      ],
    });
  });

  it("clips the text to the Worker's limit, and further when multi-byte text would push the result over its byte budget", () => {
    const long = buildTurnResult(observation({ stream: { text: "a".repeat(TURN_TEXT_LIMIT + 10) } }));
    expect(long.text).toHaveLength(TURN_TEXT_LIMIT);
    expect(long.text.endsWith("…")).toBe(true);

    const wide = buildTurnResult(observation({ stream: { text: "語".repeat(190_000) } }));
    expect(Buffer.byteLength(JSON.stringify(wide))).toBeLessThanOrEqual(TURN_RESULT_BYTES);
    expect(wide.text.length).toBeGreaterThan(100_000);
    expect(wide.text.endsWith("…")).toBe(true);
  });
});
