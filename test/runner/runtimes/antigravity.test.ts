import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { classifyExit, createParser, parseStream } from "../../../local-runner/src/runtimes/antigravity.ts";
import { runnerFixtures } from "../helpers/paths.ts";

const recorded = (name: string): string[] => readFileSync(join(runnerFixtures, "antigravity", name), "utf8").split("\n");

describe("antigravity (gemini / agy stream-json) parseStream on recorded output", () => {
  it("joins the assistant deltas and reads usage from stats (input = uncached part)", () => {
    expect(parseStream(recorded("success.jsonl"))).toEqual({
      kind: "success",
      text: "FAKE_OK",
      model: "gemini-2.5-flash",
      sessionId: "c4cf1463-bb7a-4e0c-9e6d-8dcfc3343af1",
      usage: { input_tokens: 80, cache_read_input_tokens: 20, output_tokens: 10 },
    });
  });

  it("turns tool_use/tool_result into native events, failures with their message", () => {
    const parser = createParser();
    for (const line of recorded("tool.jsonl")) parser.push(line);
    expect(parser.finish()).toMatchObject({ kind: "success", text: "Done." });
    expect(parser.evidence().nativeEvents).toEqual([
      { tool: "mcp_ctx_get", callId: "call-1", mcp: { server: "ctx", tool: "get" }, input: { key: "plan" }, status: "ok", output: "ok" },
      { tool: "run_shell_command", callId: "call-2", input: { command: "ls" }, status: "error", error: "Command rejected by the sandbox" },
    ]);
  });

  it("reports a result with status error as a failure with its message", () => {
    expect(parseStream(recorded("error.jsonl"))).toMatchObject({
      kind: "error",
      code: "cli_error",
      message: expect.stringContaining("[API Error: fake 500]"),
    });
  });

  it("reports the real binary's opening lines without a result as no_result", () => {
    expect(parseStream(recorded("init.real-0.61.0.jsonl"))).toEqual({
      kind: "no_result",
      model: "gemini-2.5-flash",
      sessionId: "4f70d5c8-bb7a-4e0c-9e6d-8dcfc3343af1",
    });
  });
});

describe("antigravity classifyExit", () => {
  it("reads the Gemini CLI's exit codes: 41 is missing credentials (plain text, no JSON)", () => {
    expect(classifyExit(41, ["Please set an Auth method in your /h/.gemini/settings.json …"])).toMatchObject({ code: "not_logged_in" });
    expect(classifyExit(53, [])).toMatchObject({ code: "max_turns" });
    expect(classifyExit(55, [])).toMatchObject({ code: "cli_error", message: expect.stringContaining("untrusted workspace") });
    expect(classifyExit(0, [])).toBeUndefined();
  });
});
