import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildArgv, buildInvocation, createParser, parseStream } from "../../../local-runner/src/runtimes/claude.ts";
import { claudeFixtures } from "../helpers/paths.ts";

const recorded = (name: string): string[] => readFileSync(join(claudeFixtures, name), "utf8").split("\n");

describe("claude buildArgv", () => {
  it("asks for non-interactive stream-json output (with the --verbose it requires) and keeps the prompt out of argv", () => {
    expect(buildArgv({ prompt: "Say hi" })).toEqual(["-p", "--output-format", "stream-json", "--verbose"]);
  });

  it("adds --model only when a model is given", () => {
    expect(buildArgv({ prompt: "Say hi", model: "sonnet" })).toEqual([
      "-p",
      "--output-format",
      "stream-json",
      "--verbose",
      "--model",
      "sonnet",
    ]);
  });

  it("sends the prompt, even one that looks like a flag, on stdin", () => {
    const invocation = buildInvocation({ prompt: "--help me with -x", cwd: "/w" });
    expect(invocation.args).not.toContain("--help me with -x");
    expect(invocation.stdinText).toBe("--help me with -x");
  });
});

describe("claude parseStream on recorded output", () => {
  it("reads text, model, session, usage and cost from a successful run", () => {
    expect(parseStream(recorded("success.jsonl"))).toEqual({
      kind: "success",
      text: "FAKE_OK: Summarize the release notes",
      model: "claude-sonnet-5-5",
      sessionId: "fa4e0000-0000-4000-8000-000000000001",
      usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 2, cache_creation_input_tokens: 0 },
      costUsd: 0.0001,
    });
  });

  it("takes the final result after tool use and ignores tool events", () => {
    const outcome = parseStream(recorded("tool-success.jsonl"));
    expect(outcome).toMatchObject({ kind: "success", text: "Done.", sessionId: "S", costUsd: 0.0123 });
    expect(outcome.kind === "success" && outcome.usage).toEqual({
      input_tokens: 32,
      output_tokens: 35,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    });
  });

  it('reports the real "Not logged in" run (subtype success, is_error true) as not_logged_in', () => {
    const outcome = parseStream(recorded("not-logged-in.jsonl"));
    expect(outcome).toMatchObject({ kind: "error", code: "not_logged_in", sessionId: "0dd65e67-ca57-4e0c-b7d9-5e9b92465132" });
    expect(outcome.kind === "error" && outcome.message).toContain("Not logged in");
  });

  it("reports the full unabridged real recording as not_logged_in too", () => {
    expect(parseStream(recorded("not-logged-in.real-2.1.332.jsonl"))).toMatchObject({ kind: "error", code: "not_logged_in" });
  });

  it("recognises not-logged-in from the result text alone when the assistant event is missing", () => {
    const lines = recorded("not-logged-in.jsonl").filter((line) => !line.includes('"type":"assistant"'));
    expect(parseStream(lines)).toMatchObject({ kind: "error", code: "not_logged_in" });
  });

  it("reports an API that stayed overloaded after the CLI's retries (529) as api_unavailable", () => {
    const outcome = parseStream(recorded("overloaded.jsonl"));
    expect(outcome).toMatchObject({ kind: "error", code: "api_unavailable", sessionId: "fa4e0000-0000-4000-8000-000000000001" });
    expect(outcome.kind === "error" && outcome.message).toMatch(/HTTP 529.*Overloaded/);
  });

  it("tells a transient API failure from the result's status alone, and leaves other API errors as they were", () => {
    const result = (status: number | null, text: string) =>
      JSON.stringify({
        type: "result",
        subtype: "success",
        is_error: true,
        terminal_reason: "api_error",
        api_error_status: status,
        result: text,
      });
    expect(parseStream([result(429, "API Error: 429 rate limited")])).toMatchObject({ kind: "error", code: "api_unavailable" });
    expect(parseStream([result(503, "API Error: 503")])).toMatchObject({ kind: "error", code: "api_unavailable" });
    // A refused request would be refused again; a missing login is a login problem.
    expect(parseStream([result(400, "API Error: 400 invalid_request_error")])).toMatchObject({ kind: "error", code: "cli_error" });
    expect(parseStream([result(null, "Not logged in · Please run /login")])).toMatchObject({ kind: "error", code: "not_logged_in" });
  });

  it("reports error_max_turns as max_turns with the CLI message", () => {
    const outcome = parseStream(recorded("max-turns.jsonl"));
    expect(outcome).toMatchObject({ kind: "error", code: "max_turns" });
    expect(outcome.kind === "error" && outcome.message).toContain("Reached maximum number of turns (2)");
  });

  it("skips non-JSON lines, half lines and unknown event types", () => {
    expect(parseStream(recorded("garbage.jsonl"))).toMatchObject({ kind: "success", text: "FAKE_OK: garbage please" });
  });

  it("reports a stream without a final result as no_result, keeping the session id", () => {
    expect(parseStream(recorded("truncated.jsonl"))).toEqual({
      kind: "no_result",
      model: "claude-sonnet-5-5",
      sessionId: "fa4e0000-0000-4000-8000-000000000001",
      partialText: "partial answer",
    });
  });

  it("reports other is_error results as cli_error with subtype and message", () => {
    const outcome = parseStream([
      JSON.stringify({
        type: "result",
        subtype: "error_during_execution",
        is_error: true,
        errors: ["tool crashed"],
        session_id: "S",
        total_cost_usd: 0.5,
      }),
    ]);
    expect(outcome).toMatchObject({ kind: "error", code: "cli_error" });
    expect(outcome.kind === "error" && outcome.message).toMatch(/error_during_execution.*tool crashed/);
  });

  it("reports only the usage fields the CLI gave and no cost when none was given", () => {
    const outcome = parseStream([
      JSON.stringify({ type: "result", subtype: "success", is_error: false, result: "ok", usage: { output_tokens: 7 } }),
    ]);
    expect(outcome).toEqual({ kind: "success", text: "ok", usage: { output_tokens: 7 } });
  });

  it("never treats a result without is_error:false as success", () => {
    expect(parseStream([JSON.stringify({ type: "result", subtype: "success", result: "ok" })])).toMatchObject({ kind: "error" });
  });

  it("marks the parser done once the final result arrives", () => {
    const parser = createParser();
    const lines = recorded("success.jsonl").filter(Boolean);
    for (const line of lines.slice(0, -1)) parser.push(line);
    expect(parser.done).toBe(false);
    parser.push(lines.at(-1)!);
    expect(parser.done).toBe(true);
  });

  it("fails a run whose MCP server claude reported as failed at init, even though the result says success", () => {
    const outcome = parseStream(recorded("mcp-failed.jsonl"));
    expect(outcome).toMatchObject({ kind: "error", code: "mcp_server_failed", sessionId: "S" });
    expect(outcome.kind === "error" && outcome.message).toContain('"crewplane"');
  });

  it("still reports not_logged_in for the real run whose MCP server also failed", () => {
    const parser = createParser();
    for (const line of recorded("mcp-failed.real-2.1.332.jsonl")) parser.push(line);
    expect(parser.finish()).toMatchObject({ kind: "error", code: "not_logged_in" });
    expect(parser.evidence().mcpServers).toEqual([{ name: "crewplane", status: "failed" }]);
  });

  it("recovers the answer from the last assistant message when the result text is empty, and says so", () => {
    expect(parseStream(recorded("handoff.jsonl"))).toMatchObject({ kind: "success", text: "Handed off.", messageRecovered: true });
  });

  it("pairs tool_use with tool_result as native tool events, in order", () => {
    const parser = createParser();
    for (const line of recorded("handoff.jsonl")) parser.push(line);
    expect(parser.evidence().nativeEvents).toEqual([
      {
        tool: "Write",
        callId: "toolu_1",
        input: { file_path: "notes/a.md", content: "token sk-abcdefghijklmnopqrstuvwx" },
        status: "ok",
        output: "File created successfully at: notes/a.md",
      },
      {
        tool: "mcp__crewplane__team_handoff",
        callId: "toolu_2",
        mcp: { server: "crewplane", tool: "team_handoff" },
        input: { packet: { packet_id: "p-1", findings: ["notes/a.md written"] } },
        status: "ok",
        output: '{"leg":"executor-to-verifier","slot":"","packet_id":"p-1"}',
      },
      {
        tool: "Bash",
        callId: "toolu_3",
        input: { command: "curl -H 'Authorization: Bearer abcdefgh12345678' x" },
        status: "error",
        error: "Claude requested permissions to use Bash, but you haven't granted it yet.",
      },
    ]);
  });
});
