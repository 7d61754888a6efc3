/**
 * FAKE_SCENARIO=team playing every call of a goal loop, as child processes: the employee's own turn,
 * the evaluator's deterministic rule, the synthesis member, and settings that differ per round.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fakeClaude, fakeCodex, fakeGemini, fakeGrok, tempDir } from "./helpers/paths.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function scratch(): string {
  const { dir, cleanup } = tempDir("crewplane-fake-loop-");
  cleanups.push(cleanup);
  return dir;
}

type Cli = "claude" | "codex" | "gemini" | "grok";

/**
 * One headless call of a fake in its real output format, the prompt where that CLI takes it (stdin,
 * or grok's prompt file); returns the final answer text, the exit status and the cwd it ran in.
 */
function call(cli: Cli, prompt: string, env: Record<string, string> = {}, cwd = scratch()) {
  // Outside the cwd, so it never looks like a file the call wrote.
  const promptFile = join(scratch(), "prompt.md");
  const argv: Record<Cli, string[]> = {
    claude: ["-p", "--output-format", "stream-json", "--verbose", "--allowedTools", "Write"],
    codex: ["exec", "--json", "--skip-git-repo-check", "-s", "workspace-write", "-"],
    gemini: ["-p", "", "-o", "stream-json", "--skip-trust", "--approval-mode", "yolo"],
    grok: ["--prompt-file", promptFile, "--output-format", "streaming-json", "--always-approve", "--sandbox", "workspace"],
  };
  if (cli === "grok") writeFileSync(promptFile, prompt);
  const bin = { claude: fakeClaude, codex: fakeCodex, gemini: fakeGemini, grok: fakeGrok }[cli];
  const out = spawnSync(bin, argv[cli], {
    cwd,
    input: cli === "grok" ? "" : prompt,
    env: { PATH: process.env.PATH, HOME: cwd, FAKE_SCENARIO: "team", ...env },
    encoding: "utf8",
    timeout: 60_000,
  });
  const events = out.stdout
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l));
  const text =
    cli === "claude"
      ? events.find((e) => e.type === "result")?.result
      : cli === "codex"
        ? events.filter((e) => e.item?.type === "agent_message").at(-1)?.item.text
        : cli === "gemini"
          ? events
              .filter((e) => e.type === "message" && e.role === "assistant")
              .map((e) => e.content)
              .join("")
          : events
              .filter((e) => e.type === "text")
              .map((e) => e.data)
              .join("");
  return { status: out.status, stderr: out.stderr, text: text as string, cwd };
}

const evaluatorPrompt = (criteria: string[], receipts: string[]) =>
  [
    "# Role: evaluator",
    "Judge independently whether the work of round 1 meets each frozen acceptance criterion, from the evidence below.",
    "",
    "## Task",
    "Write the onboarding notes",
    "",
    "## Acceptance criteria (frozen)",
    ...criteria.map((c, i) => `${i + 1}. ${c}`),
    "",
    "<artifact_receipts>",
    ...receipts,
    "</artifact_receipts>",
    "",
    "## Round 1 output",
    "1. I wrote notes/b.md too (a claim, not a criterion)",
  ].join("\n");

describe("the fake evaluator", () => {
  const criteria = ["notes/a.md exists and lists the steps", "notes/a.md and notes/b.md are both written", "The notes are clear"];

  it.each(["claude", "codex", "gemini", "grok"] as const)(
    "on %s judges each criterion by the receipts of the paths it mentions, else by every receipt",
    (cli) => {
      const out = call(cli, evaluatorPrompt(criteria, ["notes/a.md 6B sha256=3f2a1b2c… exists", "notes/b.md missing"]));
      expect(out.status).toBe(0);
      const answer = JSON.parse(out.text);
      expect(answer.criteria.map((c: { id: number; met: boolean }) => [c.id, c.met])).toEqual([
        [1, true],
        [2, false],
        [3, false],
      ]);
      expect(answer.criteria[1].reason).toContain("notes/b.md missing");
      expect(answer.criteria.every((c: { reason: unknown }) => typeof c.reason === "string")).toBe(true);
    },
  );

  it("meets a criterion that names no path only when there is a receipt and every receipt exists", () => {
    const allExist = JSON.parse(
      call("claude", evaluatorPrompt(criteria, ["notes/a.md 6B sha256=3f2a… exists", "notes/b.md 9B sha256=1a2b… exists"])).text,
    );
    expect(allExist.criteria.map((c: { met: boolean }) => c.met)).toEqual([true, true, true]);
    const none = JSON.parse(call("claude", evaluatorPrompt(criteria, ["(no artifact was declared)"])).text);
    expect(none.criteria.map((c: { met: boolean }) => c.met)).toEqual([false, false, false]);
  });

  it("does not meet a criterion that names a file no receipt covers, even when every receipt exists", () => {
    const answer = JSON.parse(
      call("claude", evaluatorPrompt(["notes/a.md exists", "notes/c.md exists"], ["notes/a.md 6B sha256=3f2a… exists"])).text,
    );
    expect(answer.criteria.map((c: { met: boolean }) => c.met)).toEqual([true, false]);
    expect(answer.criteria[1].reason).toContain("no receipt for notes/c.md");
  });

  it("treats a mismatched or unverified receipt as not met", () => {
    const answer = JSON.parse(
      call("codex", evaluatorPrompt(["notes/a.md exists"], ["notes/a.md 6B sha256=3f2a… mismatch (declared 9f8e…)"])).text,
    );
    expect(answer).toEqual({ criteria: [{ id: 1, met: false, reason: expect.stringContaining("mismatch") }] });
  });

  it("answers FAKE_EVAL_ANSWER verbatim, FAKE_<CLI>_EVAL_ANSWER first", () => {
    const prompt = evaluatorPrompt(criteria, []);
    expect(call("claude", prompt, { FAKE_EVAL_ANSWER: "I think it is fine." }).text).toBe("I think it is fine.");
    expect(call("codex", prompt, { FAKE_EVAL_ANSWER: "generic", FAKE_CODEX_EVAL_ANSWER: "codex only {" }).text).toBe("codex only {");
  });
});

describe("the fake employee turn", () => {
  it("writes FAKE_WRITE_FILES in its cwd and says which, with no MCP server and no handoff", () => {
    const out = call("claude", "# Goal round 1 for Aiko\nWrite the notes.", {
      FAKE_WRITE_FILES: JSON.stringify({ "notes/a.md": "alpha\n" }),
    });
    expect(out).toMatchObject({ status: 0, text: "Done: notes/a.md" });
    expect(readFileSync(join(out.cwd, "notes/a.md"), "utf8")).toBe("alpha\n");
    expect(call("codex", "# Goal round 1 for Aiko\nWrite the notes.").text).toBe("Nothing written.");
  });

  it("refuses a team-scenario prompt that is no goal-loop call", () => {
    const out = call("claude", "Please write the notes.");
    expect(out.status).toBe(2);
    expect(out.stderr).toContain("scenario team needs a goal-loop prompt");
  });
});

describe("round-aware fake settings", () => {
  const env = {
    FAKE_WRITE_FILES: JSON.stringify({ "any.md": "any round\n" }),
    FAKE_WRITE_FILES_ROUND_1: JSON.stringify({ "one.md": "round one\n" }),
    FAKE_CLAUDE_WRITE_FILES_ROUND_2: JSON.stringify({ "two-claude.md": "claude two\n" }),
    FAKE_WRITE_FILES_ROUND_2: JSON.stringify({ "two.md": "round two\n" }),
  };

  it("prefers FAKE_<CLI>_<NAME>_ROUND_<N>, then FAKE_<NAME>_ROUND_<N>, then the round-less names", () => {
    const turn = (n: number) => `# Goal round ${n} for Aiko\nWrite the notes.`;
    expect(call("claude", turn(1), env).text).toBe("Done: one.md");
    expect(call("claude", turn(2), env).text).toBe("Done: two-claude.md");
    expect(call("codex", turn(2), env).text).toBe("Done: two.md");
    expect(call("codex", turn(3), env).text).toBe("Done: any.md");
  });

  it("reads a team stage's round from its handoff rule", () => {
    const executor = (n: number) =>
      `# Role: executor\nDo the subtask(s) below in the employee's workspace.\nHand off with the team_handoff tool: each packet has goal_id "task_1", round ${n}, from_role "executor", to_role "verifier". Packets are the only thing the next role sees.`;
    const first = call("codex", executor(1), env);
    expect(first.text).toBe("Done: one.md");
    expect(existsSync(join(first.cwd, "one.md"))).toBe(true);
    expect(call("codex", executor(2), env).text).toBe("Done: two.md");
  });

  it("makes the scenario itself round-aware", () => {
    const out = call("claude", "# Goal round 2 for Aiko\nGo.", { FAKE_SCENARIO_ROUND_2: "fail" });
    expect(out.status).toBe(1);
    expect(call("claude", "# Goal round 1 for Aiko\nGo.", { FAKE_SCENARIO_ROUND_2: "fail" }).status).toBe(0);
  });
});

describe("the fake synthesis member", () => {
  it("answers a short synthesis naming the packets its prompt shows, and hands nothing off", () => {
    const prompt = [
      "# Role: utility",
      "Synthesize the executors' packets below into one account of this round's output.",
      "",
      "### Packet result-1 (executor → verifier, round 1)",
      "Objective: Wrote notes/a.md",
      "",
      "### Packet repair-2 (executor → verifier, round 1)",
      "Objective: Wrote notes/b.md",
    ].join("\n");
    expect(call("claude", prompt).text).toBe("Synthesis: 2 packet(s): result-1, repair-2.");
    expect(call("codex", "# Role: utility\nSynthesize.").text).toBe("Synthesis: no packets.");
  });
});

describe("the fakes play the Worker's own goal-loop prompts", () => {
  it("an employee turn from workPrompt and an evaluation from evaluatePrompt", async () => {
    const path = "../../src/team/loop-prompts.ts";
    const { workPrompt, evaluatePrompt } = (await import(/* @vite-ignore */ path)) as {
      workPrompt: (input: unknown) => string;
      evaluatePrompt: (input: unknown) => string;
    };
    const goal = { title: "Write the onboarding notes", criteria: ["notes/a.md exists", "notes/b.md exists", "the notes are clear"] };
    const marker = `<!-- crewplane-protected:${"0".repeat(64)} -->`;
    const turn = call("claude", workPrompt({ round_no: 2, employee: { name: "Aiko" }, goal, marker }), {
      FAKE_WRITE_FILES_ROUND_2: JSON.stringify({ "notes/a.md": "a\n" }),
    });
    expect(turn.text).toBe("Done: notes/a.md");

    const results = [
      {
        artifact_receipts: [
          { path: "notes/a.md", state: "exists", bytes: 2, sha256: "a".repeat(64) },
          { path: "notes/b.md", state: "missing" },
        ],
      },
    ];
    const evaluation = call("codex", evaluatePrompt({ round_no: 2, goal, results, output: turn.text, marker }));
    expect(JSON.parse(evaluation.text).criteria.map((c: { id: number; met: boolean }) => [c.id, c.met])).toEqual([
      [1, true],
      [2, false],
      [3, false],
    ]);
  });
});
