import { JOB_LIMITS, jsonStringBytes } from "../jobs/limits";
import type { Evaluation } from "./acceptance";
import type { TaskPacket } from "./packet";
import { composePrompt, neutralize, renderPacket, type PromptBlock } from "./render";
import { receiptsBlock } from "./stage-input";
import type { TeamStageResult } from "../jobs/team-stage-job";

/**
 * The goal loop's own prompts: the employee's wake-up message for a solo round (seed 002: a solo
 * round is "単一の起床メッセージ") and the evaluator's, which judges a round's output against each
 * frozen criterion. The first line of each is fixed (`# Goal round <n> for <name>`, `# Role:
 * evaluator`): it says what the call is, to a model and to the fake CLIs that play one in tests.
 */

export interface LoopGoal {
  title: string;
  /** The frozen criteria as judged (acceptance.ts `frozenCriteria`: the title when none were given). */
  criteria: readonly string[];
}

const numbered = (criteria: readonly string[]) => criteria.map((c, i) => `${i + 1}. ${neutralize(c)}`).join("\n");

/**
 * Composes within the job prompt limit, which counts the JSON encoding (a newline is two bytes
 * there): the compressible blocks are cut further until the encoded prompt fits.
 */
export function fitJobPrompt(blocks: readonly PromptBlock[], limit = JOB_LIMITS.promptBytes): string {
  let budget = limit;
  for (let attempt = 0; attempt < 6; attempt++) {
    const text = composePrompt(blocks, budget);
    const over = jsonStringBytes(text) - limit;
    if (over <= 0) return text;
    budget -= over + 256;
  }
  throw new Error(`the prompt does not fit ${limit} bytes`);
}

export interface WorkPromptInput {
  round_no: number;
  employee: { name: string };
  goal: LoopGoal;
  /** What the previous round's evaluation left unmet, with the evaluator's reasons. */
  previous?: Pick<Evaluation, "criteria" | "unmet">;
  /** A gray-zone round that went solo: the planner's subtasks, for the employee to read. */
  plan?: readonly TaskPacket[];
  marker: string;
  /** Memory entries of the employee that match the task (the knowledge feature's search). */
  memory?: readonly string[];
}

export function workPrompt(input: WorkPromptInput): string {
  const { goal, previous } = input;
  const unmet = previous
    ? previous.criteria
        .filter((c) => previous.unmet.includes(c.id))
        .map((c) => `- ${c.id}. ${neutralize(goal.criteria[c.id - 1] ?? "")} — ${neutralize(c.reason)}`)
    : [];
  const blocks: PromptBlock[] = [
    {
      text: [
        `# Goal round ${input.round_no} for ${neutralize(input.employee.name)}`,
        `You are ${neutralize(input.employee.name)}. Work on the task below yourself, in your workspace (the current directory): what you write there stays for later rounds.`,
        "Your work is judged against every acceptance criterion below, from evidence: files that exist in your workspace, not claims.",
        "When you are done, answer with a short account of what you did and where the evidence is (file paths).",
      ].join("\n"),
      protected: true,
    },
    { text: `## Task\n${neutralize(goal.title)}`, protected: true },
    { text: `## Acceptance criteria (frozen)\n${numbered(goal.criteria)}`, protected: true },
  ];
  if (unmet.length) blocks.push({ text: `## Still unmet after round ${input.round_no - 1}\n${unmet.join("\n")}`, protected: false });
  if (input.plan?.length) {
    blocks.push({ text: "## The planner's subtasks for this round (a plan to follow, not work done)", protected: false });
    for (const p of input.plan) {
      const r = renderPacket(p, input.marker);
      blocks.push({ text: r.compressible, protected: false });
      if (r.protected) blocks.push({ text: r.protected, protected: true });
    }
  }
  if (input.memory?.length) {
    blocks.push({
      text: `## Your memory (entries that match this task)\n${input.memory.map((m) => `- ${neutralize(m)}`).join("\n")}`,
      protected: false,
    });
  }
  return fitJobPrompt(blocks);
}

export interface EvaluatePromptInput {
  task_id: string;
  round_no: number;
  goal: LoopGoal;
  /** The results whose artifact receipts are the round's evidence (the work stage, or executors and repair). */
  results: readonly (TeamStageResult | undefined)[];
  /** A solo round's answer, or a team round's synthesis. */
  output?: string;
  /** A team round's executor packets (their claims; the receipts say what exists). */
  packets?: readonly TaskPacket[];
  verifier?: { verdict: "PASS" | "FAIL"; reasons: readonly string[]; repaired: boolean; unparseable: boolean };
  marker: string;
}

export function evaluatePrompt(input: EvaluatePromptInput): string {
  const receipts = receiptsBlock(input.results);
  const blocks: PromptBlock[] = [
    {
      text: [
        "# Role: evaluator",
        `Judge independently whether the work of round ${input.round_no} of task ${input.task_id} meets each frozen acceptance criterion, from the evidence below.`,
        "Only `exists` receipts confirm a file; a missing, mismatched or unreported file is no evidence. A claim that no evidence supports does not meet a criterion.",
        'Answer with JSON only: {"criteria":[{"id":1,"met":true,"reason":"…"}]}, exactly one entry per criterion, with the ids as numbered below.',
      ].join("\n"),
      protected: true,
    },
    { text: `## Task\n${neutralize(input.goal.title)}`, protected: true },
    { text: `## Acceptance criteria (frozen)\n${numbered(input.goal.criteria)}`, protected: true },
    { text: receipts.text, protected: false },
  ];
  if (input.verifier) {
    const v = input.verifier;
    const verdict = v.unparseable ? "FAIL (the verifier gave no readable verdict)" : v.verdict;
    const reasons = v.reasons.length ? `\n${v.reasons.map((r) => `- ${neutralize(r)}`).join("\n")}` : "";
    const repair = v.verdict === "FAIL" ? `\nA repair pass ${v.repaired ? "ran after it: judge the repaired work" : "did not run"}.` : "";
    blocks.push({ text: `## The team's verifier said\n${verdict}${reasons}${repair}`, protected: false });
  }
  if (input.output !== undefined) blocks.push({ text: `## Round ${input.round_no} output\n${neutralize(input.output)}`, protected: false });
  for (const p of input.packets ?? []) {
    const r = renderPacket(p, input.marker, { artifactLines: receipts.lines });
    blocks.push({ text: r.compressible, protected: false });
    if (r.protected) blocks.push({ text: r.protected, protected: true });
  }
  return fitJobPrompt(blocks);
}
