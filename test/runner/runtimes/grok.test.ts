import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildInvocation, createParser, parseStream } from "../../../local-runner/src/runtimes/grok.ts";
import { runnerFixtures } from "../helpers/paths.ts";

const recorded = (name: string): string[] => readFileSync(join(runnerFixtures, "grok", name), "utf8").split("\n");

describe("grok (Grok Build streaming-json) parseStream on recorded-format lines", () => {
  it("joins the text events and reads usage and cost from end", () => {
    expect(parseStream(recorded("success.jsonl"))).toEqual({
      kind: "success",
      text: "FAKE_OK",
      sessionId: "abc123",
      usage: { input_tokens: 80, output_tokens: 10, cache_read_input_tokens: 20, cache_creation_input_tokens: 0 },
      costUsd: 0.0001,
    });
  });

  it("pairs tool_call with tool_call_update as native events", () => {
    const parser = createParser();
    for (const line of recorded("tool.jsonl")) parser.push(line);
    expect(parser.evidence().nativeEvents).toEqual([
      { tool: "read_file", callId: "call_1", input: { path: "src/main.rs" }, status: "ok", output: '{"lines":42}' },
      {
        tool: "crewplane__team_handoff",
        callId: "call_2",
        mcp: { server: "crewplane", tool: "team_handoff" },
        input: { packet: { packet_id: "g-1" } },
        status: "ok",
        output: '{"leg":"executor-to-verifier"}',
      },
    ]);
  });

  it("reports stopReason max_turn_requests as max_turns", () => {
    expect(parseStream(recorded("max-turns.jsonl"))).toMatchObject({ kind: "error", code: "max_turns" });
  });

  it("leaves out a partial cost", () => {
    const lines = recorded("max-turns.jsonl").map((l) => l.replace("max_turn_requests", "end_turn"));
    const outcome = parseStream(lines);
    expect(outcome).toMatchObject({ kind: "success", usage: { input_tokens: 80 } });
    expect("costUsd" in outcome).toBe(false);
  });

  it("reports an error event with no end as the CLI's own failure, not as truncated", () => {
    expect(parseStream(recorded("error.jsonl"))).toMatchObject({
      kind: "error",
      code: "cli_error",
      message: expect.stringContaining("synthetic Grok failure"),
    });
  });

  it("reports a stream with neither end nor error as no_result", () => {
    expect(parseStream(['{"type":"thought","data":"x"}', '{"type":"text","data":"half"}'])).toEqual({
      kind: "no_result",
      partialText: "half",
    });
  });
});

describe("grok invocation", () => {
  it("writes the prompt (with the role block) to a prompt file in the scaffold: headless grok ignores stdin", () => {
    const invocation = buildInvocation({ prompt: "Verify.", cwd: "/s", memberDir: "/s", roleInstructions: "contract" });
    expect(invocation.stdinText).toBeUndefined();
    expect(invocation.files).toEqual([
      { path: "/s/prompt.md", content: "<role_system_prompt>\ncontract\n</role_system_prompt>\n\nVerify." },
    ]);
    expect(invocation.args.slice(0, 2)).toEqual(["--prompt-file", "/s/prompt.md"]);
  });
});
