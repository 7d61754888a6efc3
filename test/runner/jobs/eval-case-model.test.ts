/**
 * The fakes play an eval case per model as well as per case (issue 22: a capability matrix compares
 * models on the same cases): FAKE_<NAME>_<CASE>_MODEL_<MODEL>, then FAKE_<NAME>_MODEL_<MODEL>, then
 * the case-aware and plain names, each with its FAKE_<CLI>_ form first. The model is the one the CLI
 * runs as, read from the argv the runner built for the payload's model (claude `--model`, codex `-m`),
 * so these run through the real eval_case job, not the fakes alone.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { EvalCaseResult } from "../../../local-runner/src/eval/result.ts";
import { runEvalCaseJob } from "../../../local-runner/src/jobs/eval-case.ts";
import type { JobOutcome } from "../../../local-runner/src/jobs/utility.ts";
import { runtimeTable } from "../../../local-runner/src/runtimes/index.ts";
import { fakeAgy, fakeClaude, fakeCodex, fakeGrok, tempDir } from "../helpers/paths.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const readme = (text: string) => JSON.stringify({ "README.md": text });

function setup(env: Record<string, string>) {
  const { dir: home, cleanup } = tempDir("crewplane-eval-model-");
  cleanups.push(cleanup);
  const argvLog = join(home, "argv.jsonl");
  const ctx = {
    runtimes: runtimeTable({ claude: fakeClaude, codex: fakeCodex, grok: fakeGrok, agy: fakeAgy }),
    home,
    signal: new AbortController().signal,
    env: { ...process.env, FAKE_ARGV_LOG: argvLog, ...env },
    killGraceMs: 1000,
  };
  let n = 0;
  /** One case on one runtime and model; `caseId` other than readme-basic plays another case. */
  const run = async (runtime: string, model: string | null, caseId = "readme-basic"): Promise<EvalCaseResult> => {
    const outcome: JobOutcome = await runEvalCaseJob(
      {
        job_id: `job-${++n}`,
        payload: {
          runtime,
          model,
          run_id: "evr_1",
          case_id: caseId,
          domain: "writing",
          prompt: `# Eval case writing/${caseId}\nWrite README.md.`,
          workspace_files: {},
          observe_paths: ["README.md"],
          timeout_ms: 30_000,
        },
      },
      ctx,
    );
    if (outcome.kind !== "completed") throw new Error(`eval case did not complete: ${JSON.stringify(outcome)}`);
    return outcome.result as unknown as EvalCaseResult;
  };
  const argvs = (): string[][] =>
    existsSync(argvLog)
      ? readFileSync(argvLog, "utf8")
          .trim()
          .split("\n")
          .map((l) => (JSON.parse(l) as { argv: string[] }).argv)
      : [];
  return { run, argvs };
}

describe("eval settings per model in the fake claude", () => {
  it("takes the case-and-model setting first, then the model's, then the case's, then the plain one", async () => {
    const { run, argvs } = setup({
      FAKE_EVAL_WRITE_FILES: readme("any case, any model\n"),
      FAKE_EVAL_WRITE_FILES_README_BASIC: readme("readme-basic, any model\n"),
      FAKE_EVAL_WRITE_FILES_MODEL_CLAUDE_OPUS_4_5: readme("any case, opus\n"),
      FAKE_EVAL_WRITE_FILES_README_BASIC_MODEL_CLAUDE_OPUS_4_5: readme("readme-basic, opus\n"),
      FAKE_CLAUDE_EVAL_ANSWER_TEXT_MODEL_CLAUDE_HAIKU_4_5: "haiku says so",
    });
    const opus = await run("claude", "claude-opus-4-5");
    expect(opus.files["README.md"]).toBe("readme-basic, opus\n");
    expect(opus.text).toBe("Done.");
    expect((await run("claude", "claude-opus-4-5", "other-case")).files["README.md"]).toBe("any case, opus\n");
    const haiku = await run("claude", "claude-haiku-4-5");
    expect(haiku.files["README.md"]).toBe("readme-basic, any model\n");
    expect(haiku.text).toBe("haiku says so");
    expect((await run("claude", "claude-haiku-4-5", "other-case")).files["README.md"]).toBe("any case, any model\n");
    // The model came to the fake the way it comes to the real CLI: `--model <m>` in argv.
    expect(argvs().map((a) => a[a.indexOf("--model") + 1])).toEqual([
      "claude-opus-4-5",
      "claude-opus-4-5",
      "claude-haiku-4-5",
      "claude-haiku-4-5",
    ]);
  });

  it("keys on the model it runs as: an alias resolved, its default model when none is given", async () => {
    const { run, argvs } = setup({
      FAKE_EVAL_WRITE_FILES_MODEL_CLAUDE_OPUS_5_5: readme("opus alias\n"),
      FAKE_EVAL_WRITE_FILES_MODEL_CLAUDE_SONNET_5_5: readme("default model\n"),
    });
    expect((await run("claude", "opus")).files["README.md"]).toBe("opus alias\n");
    expect((await run("claude", null)).files["README.md"]).toBe("default model\n");
    expect(argvs()[1]).not.toContain("--model");
  });

  it("puts FAKE_CLAUDE_ first at each step, and never lets a model setting reach another model", async () => {
    const { run } = setup({
      FAKE_EVAL_WRITE_FILES_README_BASIC_MODEL_CLAUDE_OPUS_4_5: readme("any cli\n"),
      FAKE_CLAUDE_EVAL_WRITE_FILES_README_BASIC_MODEL_CLAUDE_OPUS_4_5: readme("claude only\n"),
      FAKE_CLAUDE_EVAL_WRITE_FILES_MODEL_CLAUDE_OPUS_4_5: readme("claude, any case\n"),
    });
    expect((await run("claude", "claude-opus-4-5")).files["README.md"]).toBe("claude only\n");
    expect((await run("claude", "claude-opus-4-5", "other-case")).files["README.md"]).toBe("claude, any case\n");
    expect((await run("claude", "claude-opus-4-1")).files["README.md"]).toBeNull();
  });
});

describe("eval settings per model in the other fakes", () => {
  it("codex reads its model from -m, and applies no model setting when it was given none", async () => {
    const { run, argvs } = setup({
      FAKE_EVAL_WRITE_FILES: readme("plain\n"),
      FAKE_CODEX_EVAL_WRITE_FILES_MODEL_GPT_5_5: readme("codex gpt-5.5\n"),
      FAKE_EVAL_ANSWER_TEXT_README_BASIC_MODEL_GPT_5_5_MINI: "mini on readme-basic",
    });
    expect((await run("codex", "gpt-5.5")).files["README.md"]).toBe("codex gpt-5.5\n");
    const mini = await run("codex", "gpt-5.5-mini");
    expect(mini.files["README.md"]).toBe("plain\n");
    expect(mini.text).toBe("mini on readme-basic");
    expect((await run("codex", null)).files["README.md"]).toBe("plain\n");
    expect(argvs().map((a) => (a.includes("-m") ? a[a.indexOf("-m") + 1] : null))).toEqual(["gpt-5.5", "gpt-5.5-mini", null]);
  });

  it("grok and agy read theirs from -m/--model too", async () => {
    const { run } = setup({
      FAKE_EVAL_WRITE_FILES_MODEL_GROK_5: readme("grok-5\n"),
      FAKE_AGY_EVAL_WRITE_FILES_MODEL_GEMINI_3_PRO: readme("gemini-3-pro\n"),
    });
    expect((await run("grok", "grok-5")).files["README.md"]).toBe("grok-5\n");
    expect((await run("grok", "grok-4")).files["README.md"]).toBeNull();
    // agy writes only with yolo approval, which the default employee tools give.
    expect((await run("antigravity", "gemini-3-pro")).files["README.md"]).toBe("gemini-3-pro\n");
  });
});
