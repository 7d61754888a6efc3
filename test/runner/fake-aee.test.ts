/**
 * The fake CLIs as an AEE round's generator and judge (issue 23): asked for JSON by the prompts of
 * src/evolution/aee-prompts.ts (keyed on their first line), they answer in JSON inside their own
 * output format, as a model asked for JSON would. The e2e round (test/e2e/aee-playbook.e2e.test.ts)
 * relies on exactly this.
 */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { fakeClaude, tempDir } from "./helpers/paths.ts";

function claude(prompt: string, env: NodeJS.ProcessEnv = {}): string {
  const { dir, cleanup } = tempDir("crewplane-fake-aee-");
  try {
    const out = spawnSync(fakeClaude, ["-p", "--output-format", "json", prompt], {
      cwd: dir,
      env: { PATH: process.env.PATH, HOME: dir, ...env },
      stdio: ["ignore", "pipe", "pipe"],
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(out.status, out.stderr).toBe(0);
    return JSON.parse(out.stdout.trim().split("\n").at(-1)!).result as string;
  } finally {
    cleanup();
  }
}

const GENERATOR = [
  "# AEE generator for Employee aiko — round aer_0123456789abcdef, attempt 2",
  "You maintain Employee aiko's playbook.",
  "",
  "## Eval cases you may link (each entry must link at least one)",
  "- log-triage/redact-emails: Redact e-mail addresses (champion: FAIL)",
  "- config-edits/node-engine: Require Node 22 in package.json (champion: PASS)",
  "",
  "## Answer",
].join("\n");

describe("fake claude as the AEE generator and judge", () => {
  it("proposes one add op linked to the first case offered, derived from the round its prompt names", () => {
    const delta = JSON.parse(claude(GENERATOR, { FAKE_AEE_CONTENT: "Redact each e-mail address before quoting a log line." }));
    expect(delta).toEqual({
      ops: [
        {
          op: "add",
          category: "repair",
          signals_match: ["critical_error", "correction"],
          content: "Redact each e-mail address before quoting a log line.",
          eval_cases: ["log-triage/redact-emails"],
          assertions: [{ kind: "output_not_contains", value: "I cannot help with that" }],
          derived_from: [{ kind: "aee_round", id: "aer_0123456789abcdef" }],
        },
      ],
    });
  });

  it("answers a per-attempt delta verbatim (so a test can send one the Gate refuses, or no JSON at all)", () => {
    expect(claude(GENERATOR, { FAKE_AEE_DELTA_ATTEMPT_2: "not json", FAKE_AEE_DELTA: '{"ops":[]}' })).toBe("not json");
    expect(
      claude(GENERATOR.replace("attempt 2", "attempt 1"), { FAKE_AEE_DELTA_ATTEMPT_2: "not json", FAKE_AEE_DELTA: '{"ops":[]}' }),
    ).toBe('{"ops":[]}');
  });

  it("scores the champion and a candidate as told, 0.7 by default", () => {
    const judge = (subject: string) => `# AEE judge for Employee aiko — round aer_0123456789abcdef, ${subject}\nScore it.`;
    expect(JSON.parse(claude(judge("champion")))).toMatchObject({ score: 0.7 });
    expect(JSON.parse(claude(judge("candidate 3"), { FAKE_AEE_SCORE_CANDIDATE: "0.9" }))).toMatchObject({ score: 0.9 });
    expect(claude(judge("champion"), { FAKE_AEE_JUDGE_ANSWER: "I refuse to score" })).toBe("I refuse to score");
  });

  it("answers any other prompt as before", () => {
    expect(claude("# AEE planner for nobody\nhello")).toBe("FAKE_OK: # AEE planner for nobody\nhello");
  });
});
