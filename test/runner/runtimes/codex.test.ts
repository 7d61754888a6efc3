import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildInvocation, createParser, parseStream, withRoleBlock } from "../../../local-runner/src/runtimes/codex.ts";
import { runnerFixtures } from "../helpers/paths.ts";

const recorded = (name: string): string[] => readFileSync(join(runnerFixtures, "codex", name), "utf8").split("\n");

describe("codex parseStream on recorded output", () => {
  it("reads the agent message, thread id and usage (cached input split out of input)", () => {
    expect(parseStream(recorded("success.jsonl"))).toEqual({
      kind: "success",
      text: "FAKE_OK",
      sessionId: "01a2295d-f9c6-7d23-a20c-b7f5430b6688",
      usage: { input_tokens: 80, cache_read_input_tokens: 20, output_tokens: 10 },
      // turn.completed has no text of its own: the answer is always the last agent_message.
      messageRecovered: true,
    });
  });

  it("takes the answer from the last agent_message, not from the last line of the stream", () => {
    // The last line is turn.completed; the seed's verifier once parsed that as the verdict.
    const lines = recorded("handoff.jsonl");
    expect(lines.filter(Boolean).at(-1)).toContain("turn.completed");
    expect(parseStream(lines)).toMatchObject({ kind: "success", text: '{"verdict":"PASS","reasons":["both files exist"]}' });
  });

  it("reports only the usage counters codex gave", () => {
    expect(parseStream(recorded("handoff.jsonl"))).toMatchObject({ usage: { input_tokens: 500, output_tokens: 40 } });
    const outcome = parseStream(['{"type":"thread.started","thread_id":"T"}', '{"type":"turn.completed"}']);
    expect(outcome).toEqual({ kind: "success", text: "", sessionId: "T" });
  });

  it("turns command_execution, mcp_tool_call and file_change items into native tool events", () => {
    const parser = createParser();
    for (const line of recorded("tool.jsonl")) parser.push(line);
    expect(parser.evidence().nativeEvents).toEqual([
      { tool: "command_execution", callId: "item_1", input: { command: "bash -lc ls" }, status: "ok", output: "README.md\n" },
      { tool: "mcp__ctx__get", callId: "item_2", mcp: { server: "ctx", tool: "get" }, input: { key: "plan" }, status: "ok", output: "ok" },
      { tool: "file_change", callId: "item_3", input: { changes: [{ path: "src/a.ts", kind: "update" }] }, status: "ok" },
    ]);
  });

  it("records failed, declined and cancelled calls as errors with their reason", () => {
    const parser = createParser();
    for (const line of recorded("handoff.jsonl")) parser.push(line);
    const events = parser.evidence().nativeEvents;
    expect(events.map((e) => [e.tool, e.status])).toEqual([
      ["command_execution", "error"],
      ["mcp__crewplane__team_handoff", "ok"],
      ["mcp__crewplane__team_handoff", "error"],
      ["command_execution", "declined"],
    ]);
    expect(events[2]?.error).toBe("user cancelled MCP tool call");
  });

  it("reports turn.failed as a failure with the CLI's message", () => {
    expect(parseStream(recorded("failed.jsonl"))).toMatchObject({
      kind: "error",
      code: "network_error",
      message: expect.stringContaining("stream disconnected"),
    });
  });

  it("reports a 401 as not_logged_in", () => {
    expect(parseStream(recorded("unauthorized.jsonl"))).toMatchObject({ kind: "error", code: "not_logged_in" });
  });

  it("reports a stream without turn.completed as no_result, keeping the partial agent message", () => {
    expect(parseStream(recorded("truncated.jsonl"))).toEqual({
      kind: "no_result",
      sessionId: "01a2295d-f9c6-7d23-a20c-b7f5430b6688",
      partialText: "half an answer",
    });
  });

  it("collects the real binary's offline reconnect errors as network trouble (the run never ends by itself)", () => {
    const parser = createParser();
    for (const line of recorded("offline.real-0.171.0.jsonl")) parser.push(line);
    expect(parser.done).toBe(false);
    expect(parser.finish()).toMatchObject({ kind: "no_result" });
    expect(parser.evidence().networkErrors).toHaveLength(6);
    expect(parser.evidence().networkErrors.at(-1)).toContain("waiting for network");
  });

  it("skips garbage lines", () => {
    expect(parseStream(["Warning: x", '{"type":"item.completed","item":', ...recorded("success.jsonl")])).toMatchObject({
      kind: "success",
      text: "FAKE_OK",
    });
  });
});

describe("codex invocation", () => {
  it("puts role instructions in a <role_system_prompt> block ahead of the prompt, on stdin", () => {
    const invocation = buildInvocation({ prompt: "Do subtask 2.", cwd: "/w", roleInstructions: "# Role contract: executor\n" });
    expect(invocation.stdinText).toBe("<role_system_prompt>\n# Role contract: executor\n</role_system_prompt>\n\nDo subtask 2.");
    expect(invocation.args.at(-1)).toBe("-");
    expect(withRoleBlock("p", undefined)).toBe("p");
  });
});
