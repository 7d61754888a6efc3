import { describe, expect, it } from "vitest";
import { modelFamily, normalizeRuntime } from "../../../src/team/catalog";
import { effortForRuntime, parseEffort } from "../../../src/team/effort";

describe("runtime catalog", () => {
  it.each([
    ["claude-fable-5-1", "claude"],
    ["claude-haiku-4-5", "claude"],
    ["gpt-5.5", "openai"],
    ["o3", "openai"],
    ["o4-mini", "openai"],
    ["codex-mini-latest", "openai"],
    ["gemini-3.7-flash", "gemini"],
    ["grok-4", "grok"],
    ["Claude-Sonnet-4-6", "claude"],
  ])("puts %s in the %s family", (model, family) => {
    expect(modelFamily(model)).toBe(family);
  });

  it.each(["qwen-3-coder", "llama-4", "omni", "o-series", "mistral-large", "claude", "gpt", ""])(
    "knows no family for %j and does not guess one",
    (model) => {
      expect(modelFamily(model)).toBeNull();
    },
  );

  it("allows only claude, codex, antigravity and grok as team runtimes, with agy written as antigravity", () => {
    expect(["claude", "codex", "antigravity", "grok", "agy", " Codex "].map(normalizeRuntime)).toEqual([
      "claude",
      "codex",
      "antigravity",
      "grok",
      "antigravity",
      "codex",
    ]);
    for (const other of ["offline", "openai_compat", "qwen", "copilot", "cursor", "gemini", ""]) expect(normalizeRuntime(other)).toBeNull();
  });
});

describe("effort", () => {
  it("parses low, medium, high, xhigh and max case-insensitively and nothing else", () => {
    expect(["LOW", "Medium", "high", "XHigh", " max "].map(parseEffort)).toEqual(["low", "medium", "high", "xhigh", "max"]);
    for (const bad of ["extreme", "minimal", "none", "hi", ""]) expect(parseEffort(bad)).toBeNull();
  });

  it("maps one resolved effort onto each runtime's own flag", () => {
    expect(effortForRuntime("claude", "high")?.argv).toEqual(["--effort", "high"]);
    expect(effortForRuntime("codex", "high")?.argv).toEqual(["-c", 'model_reasoning_effort="high"']);
    expect(effortForRuntime("antigravity", "low")?.argv).toEqual(["--effort", "low"]);
    expect(effortForRuntime("grok", "xhigh")?.argv).toEqual(["--reasoning-effort", "xhigh"]);
  });

  it("caps max to xhigh for codex and says so", () => {
    expect(effortForRuntime("codex", "max")).toEqual({ level: "xhigh", capped: true, argv: ["-c", 'model_reasoning_effort="xhigh"'] });
    expect(effortForRuntime("claude", "max")).toEqual({ level: "max", capped: false, argv: ["--effort", "max"] });
  });

  it("passes no flag at all when no effort was set", () => {
    expect(effortForRuntime("claude", undefined)).toBeNull();
  });
});
