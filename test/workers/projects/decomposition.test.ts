import { describe, expect, it } from "vitest";
import { backoffMs, checkDecomposition, decompositionPrompt, readModelDecomposition } from "../../../src/projects/decomposition";

const task = (title: string, weight: unknown, extra: Record<string, unknown> = {}) => ({ title, signals: ["design"], weight, ...extra });
const valid = { tasks: [task("Design the API", 0.35), task("Implement the API", 0.3), task("Write regression tests", 0.2)] };

describe("decomposition validation", () => {
  it("accepts 2-10 tasks with signals and weights summing to at most 0.85 (0.35 + 0.30 + 0.20 is exactly 0.85)", () => {
    const verdict = checkDecomposition(valid);
    expect(verdict.ok).toBe(true);
    if (verdict.ok) expect(verdict.tasks.map((t) => t.title)).toEqual(["Design the API", "Implement the API", "Write regression tests"]);
  });

  it("reads EvoMap's comma-separated signals as a list", () => {
    const verdict = checkDecomposition({ tasks: [task("A task", 0.4, { signals: "analysis, design" }), task("B task", 0.4)] });
    expect(verdict.ok && verdict.tasks[0]!.signals).toEqual(["analysis", "design"]);
  });

  it.each([
    ["one task", { tasks: [task("Only", 0.5)] }, "task_count_out_of_range"],
    ["eleven tasks", { tasks: Array.from({ length: 11 }, (_, i) => task(`Task ${i}`, 0.05)) }, "task_count_out_of_range"],
    ["no tasks", { tasks: [] }, "task_count_out_of_range"],
    ["weights over 0.85", { tasks: [task("A task", 0.5), task("B task", 0.36)] }, "weights_exceed_limit"],
    ["a zero weight", { tasks: [task("A task", 0.5), task("B task", 0)] }, "schema_mismatch"],
    ["a negative weight", { tasks: [task("A task", 0.5), task("B task", -0.1)] }, "schema_mismatch"],
    ["a weight as a string", { tasks: [task("A task", 0.5), task("B task", "0.1")] }, "schema_mismatch"],
    ["duplicate titles", { tasks: [task("Write docs", 0.3), task("write  DOCS", 0.3)] }, "duplicate_titles"],
    ["full-width duplicate titles", { tasks: [task("Docs", 0.3), task("Ｄｏｃｓ", 0.3)] }, "duplicate_titles"],
    ["no signals", { tasks: [task("A task", 0.3, { signals: [] }), task("B task", 0.3)] }, "schema_mismatch"],
    ["a missing title", { tasks: [{ signals: ["x"], weight: 0.3 }, task("B task", 0.3)] }, "schema_mismatch"],
    ["an unknown field in a task", { tasks: [task("A task", 0.3, { assignee: "me" }), task("B task", 0.3)] }, "schema_mismatch"],
    ["an unknown top-level field", { ...valid, note: "x" }, "schema_mismatch"],
    ["a bare array", valid.tasks, "schema_mismatch"],
    ["a control character in a title", { tasks: [task("A\u0007task", 0.3), task("B task", 0.3)] }, "schema_mismatch"],
  ])("refuses %s with reason %s", (_, value, reason) => {
    const verdict = checkDecomposition(value);
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) {
      expect(verdict.reason).toBe(reason);
      expect(verdict.errors.length).toBeGreaterThan(0);
    }
  });

  it("names the path of the bad field", () => {
    const verdict = checkDecomposition({ tasks: [task("A task", 0.3), task("B task", 0.3, { weight: 2 })] });
    expect(!verdict.ok && verdict.errors.map((e) => e.path)).toEqual(["tasks.1.weight"]);
  });
});

describe("reading a model's decomposition", () => {
  it("takes one JSON object, optionally in a single ```json fence", () => {
    expect(readModelDecomposition(JSON.stringify(valid)).ok).toBe(true);
    expect(readModelDecomposition("```json\n" + JSON.stringify(valid) + "\n```").ok).toBe(true);
  });

  it.each([
    ["nothing", null, "empty_answer"],
    ["blank text", "  \n", "empty_answer"],
    ["prose around the JSON", `Here you go: ${JSON.stringify(valid)}`, "not_json"],
    ["two fences", "```json\n{}\n```\n```json\n{}\n```", "not_json"],
    ["the offline runtime's labelled text", "[offline runtime] You split an approved project (sha256:0123456789ab)", "not_json"],
    ["valid JSON of the wrong shape", JSON.stringify({ subtasks: valid.tasks }), "schema_mismatch"],
  ])("refuses %s (%s)", (_, text, reason) => {
    const verdict = readModelDecomposition(text);
    expect(verdict.ok ? "ok" : verdict.reason).toBe(reason);
  });
});

describe("decomposition prompt and backoff", () => {
  it("states the rules and carries the project as JSON data", () => {
    const prompt = decompositionPrompt({
      name: "digest",
      summary: "s",
      title: "t",
      plan: "Build the digest.",
      consensus: "Yes.",
      conditions: ["redact"],
    });
    expect(prompt).toContain("2 to 10 tasks");
    expect(prompt).toContain("at most 0.85");
    const data = JSON.parse(prompt.split("\n").at(-1)!);
    expect(data).toEqual({
      name: "digest",
      title: "t",
      summary: "s",
      plan: "Build the digest.",
      council_consensus: "Yes.",
      council_conditions: ["redact"],
    });
  });

  it("stays under the 64 KiB prompt limit whatever the plan's length", () => {
    const prompt = decompositionPrompt({ name: "n", summary: "s", title: "t", plan: "x".repeat(200_000) });
    expect(new TextEncoder().encode(JSON.stringify(prompt)).byteLength).toBeLessThan(65_536);
  });

  it("doubles the wait after each failed attempt, up to the cap", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((n) => backoffMs(n, 60_000, 6 * 3_600_000))).toEqual([
      60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000, 3_840_000, 7_680_000, 15_360_000, 21_600_000,
    ]);
  });
});
