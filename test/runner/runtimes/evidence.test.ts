import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createParser as claudeParser } from "../../../local-runner/src/runtimes/claude.ts";
import { createParser as codexParser } from "../../../local-runner/src/runtimes/codex.ts";
import { evidenceRows, NATIVE_EVENT_CAP, TRUNCATED_ROW } from "../../../local-runner/src/runtimes/evidence.ts";
import type { NativeToolEvent } from "../../../local-runner/src/runtimes/types.ts";
import { sumUsage } from "../../../local-runner/src/runtimes/usage.ts";
import { runnerFixtures } from "../helpers/paths.ts";

const eventsOf = (parser: ReturnType<typeof claudeParser>, file: string): NativeToolEvent[] => {
  for (const line of readFileSync(join(runnerFixtures, file), "utf8").split("\n")) parser.push(line);
  return parser.evidence().nativeEvents;
};

describe("evidenceRows", () => {
  it("labels every row as native evidence of its runtime and model", () => {
    const rows = evidenceRows(eventsOf(codexParser(), "codex/tool.jsonl"), { runtime: "codex", model: "gpt-5.5" });
    expect(rows).toHaveLength(3);
    for (const row of rows)
      expect(row).toMatchObject({ source: "native", evidence_source: "native_tool_event", runtime: "codex", model: "gpt-5.5" });
  });

  it("keeps a self-echo tool's call (team_handoff) but withholds its output, whatever the runtime's naming", () => {
    const claude = evidenceRows(eventsOf(claudeParser(), "claude/handoff.jsonl"), { runtime: "claude" });
    const handoff = claude.find((r) => r.tool === "mcp__crewplane__team_handoff");
    expect(handoff).toMatchObject({ status: "ok", input: { packet: { packet_id: "p-1" } }, output_suppressed: "self_echo" });
    expect(handoff && "output" in handoff).toBe(false);
    const grok = evidenceRows(
      [{ tool: "crewplane__team_handoff", mcp: { server: "crewplane", tool: "team_handoff" }, status: "ok", output: "echo" }],
      { runtime: "grok" },
    );
    expect(grok[0]).toMatchObject({ output_suppressed: "self_echo" });
    const gemini = evidenceRows([{ tool: "mcp_crewplane_team_handoff", status: "ok", output: "echo" }], { runtime: "antigravity" });
    expect(gemini[0]).toMatchObject({ output_suppressed: "self_echo" });
    // Other tools keep their output.
    expect(claude.find((r) => r.tool === "Write")).toMatchObject({ output: "File created successfully at: notes/a.md" });
  });

  it("leaves a trace of failed and declined calls with error_class native_tool_error", () => {
    const rows = evidenceRows(eventsOf(codexParser(), "codex/handoff.jsonl"), { runtime: "codex" });
    expect(rows.map((r) => ("error_class" in r ? r.error_class : undefined))).toEqual([
      "native_tool_error",
      undefined,
      "native_tool_error",
      "native_tool_error",
    ]);
  });

  it("masks secrets in inputs and outputs: known strings, token patterns and secret-named fields", () => {
    const rows = evidenceRows(
      [
        {
          tool: "Bash",
          status: "ok",
          input: { command: "curl -H 'Authorization: Bearer abcdefgh12345678' x", api_key: "k-123" },
          output: "member_abc.secretsecret used",
        },
        { tool: "Write", status: "ok", input: { file_path: "a", content: "sk-abcdefghijklmnopqrstuvwx" } },
      ],
      { runtime: "claude", secrets: ["member_abc.secretsecret"] },
    );
    expect(rows[0]).toMatchObject({
      input: { command: "curl -H 'Authorization: [masked]' x", api_key: "[masked]" },
      output: "[masked] used",
    });
    expect(rows[1]).toMatchObject({ input: { file_path: "a", content: "[masked]" } });
  });

  it(`lets at most ${NATIVE_EVENT_CAP} events through and counts the rest in one truncation row`, () => {
    const events: NativeToolEvent[] = Array.from({ length: 250 }, (_, i) => ({
      tool: "command_execution",
      callId: `item_${i}`,
      status: "ok",
      input: { command: `echo ${i}` },
    }));
    const rows = evidenceRows(events, { runtime: "codex" });
    expect(rows).toHaveLength(NATIVE_EVENT_CAP + 1);
    expect(rows.at(-2)).toMatchObject({ call_id: `item_${NATIVE_EVENT_CAP - 1}` });
    expect(rows.at(-1)).toEqual({
      source: "native",
      evidence_source: "native_tool_event",
      runtime: "codex",
      tool: TRUNCATED_ROW,
      count: 50,
    });
    expect(evidenceRows(events.slice(0, NATIVE_EVENT_CAP), { runtime: "codex" }).some((r) => r.tool === TRUNCATED_ROW)).toBe(false);
  });

  it("clips very long outputs", () => {
    const rows = evidenceRows([{ tool: "Read", status: "ok", output: "x".repeat(10_000) }], { runtime: "claude" });
    expect(rows[0] && "output" in rows[0] && rows[0].output?.length).toBeLessThan(4_100);
  });
});

describe("sumUsage", () => {
  it("adds each counter over the legs that reported it and counts the legs", () => {
    expect(
      sumUsage([
        { input_tokens: 10, output_tokens: 5 },
        { input_tokens: 3, cache_read_input_tokens: 7 },
      ]),
    ).toEqual({
      usage: { input_tokens: 13, output_tokens: 5, cache_read_input_tokens: 7 },
      usage_legs: 2,
    });
  });

  it("keeps a counter only one leg measured instead of zeroing it, and skips legs that reported nothing", () => {
    expect(sumUsage([undefined, { output_tokens: 4 }, {}])).toEqual({ usage: { output_tokens: 4 }, usage_legs: 1 });
  });

  it("returns nothing at all when no leg reported usage: unknown is not zero", () => {
    expect(sumUsage([])).toEqual({});
    expect(sumUsage([undefined, {}])).toEqual({});
  });

  it("saturates instead of overflowing", () => {
    expect(sumUsage([{ input_tokens: Number.MAX_SAFE_INTEGER }, { input_tokens: 10 }]).usage?.input_tokens).toBe(Number.MAX_SAFE_INTEGER);
  });
});
