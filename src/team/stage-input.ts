import type { TaskPacket } from "./packet";
import { composePrompt, neutralize, renderPacket, type PromptBlock } from "./render";
import type { FrozenGoal } from "./spec-store";
import { STAGE_PROMPT_MAX_BYTES, type TeamStageResult } from "../jobs/team-stage-job";

/**
 * Stage prompts. Each role sees what its stage needs and nothing else: in particular the verifier
 * gets the frozen acceptance criteria, the executors' packets, the tool activity digest and the
 * artifact receipts, and never the planner's narrative nor the executors' own prose.
 */
export interface StageContext {
  task_id: string;
  round_no: number;
  goal: FrozenGoal;
  marker: string;
  /** What the previous round's acceptance path left unmet (the planner of a later round aims at it). */
  unmet?: readonly { id: number; criterion: string; reason: string }[];
}

const criteria = (goal: FrozenGoal) => goal.acceptance_criteria.map((c, i) => `${i + 1}. ${neutralize(c)}`).join("\n");

function handoffRule(ctx: StageContext, from: string, to: string) {
  return `Hand off with the team_handoff tool: each packet has goal_id "${ctx.task_id}", round ${ctx.round_no}, from_role "${from}", to_role "${to}". Packets are the only thing the next role sees.`;
}

function packetBlocks(packets: readonly TaskPacket[], marker: string, artifactLines?: ReadonlyMap<string, string>): PromptBlock[] {
  return packets.flatMap((p) => {
    const r = renderPacket(p, marker, { artifactLines });
    return [{ text: r.compressible, protected: false }, ...(r.protected ? [{ text: r.protected, protected: true }] : [])];
  });
}

export function planPrompt(ctx: StageContext): string {
  return composePrompt(
    [
      {
        text: [
          "# Role: planner",
          "Decompose the goal into subtasks that can be completed independently. Do not do the work yourself.",
          "Return one packet per subtask; list dependencies between subtasks explicitly in depends_on.",
          handoffRule(ctx, "planner", "executor"),
        ].join("\n"),
        protected: true,
      },
      { text: `## Goal\n${neutralize(ctx.goal.title)}`, protected: false },
      { text: `## Acceptance criteria (frozen)\n${criteria(ctx.goal)}`, protected: true },
      ...(ctx.unmet?.length
        ? [
            {
              text: `## Still unmet after round ${ctx.round_no - 1}\n${ctx.unmet.map((u) => `- ${u.id}. ${neutralize(u.criterion)} — ${neutralize(u.reason)}`).join("\n")}`,
              protected: false,
            },
          ]
        : []),
    ],
    STAGE_PROMPT_MAX_BYTES,
  );
}

/**
 * The utility role's synthesis (seed 002 合成): one account of what the executors produced, for the
 * acceptance path. It neither works nor judges; the verifier never reads it.
 */
export function synthesizePrompt(
  ctx: StageContext,
  executorPackets: readonly TaskPacket[],
  executorResults: readonly (TeamStageResult | undefined)[],
): string {
  const receipts = receiptsBlock(executorResults);
  return composePrompt(
    [
      {
        text: [
          "# Role: utility",
          "Synthesize the executors' packets below into one account of this round's output: what was produced, where (file paths), what is still open.",
          "Do no new work and do not judge it. Answer in plain text; hand off nothing.",
        ].join("\n"),
        protected: true,
      },
      { text: `## Acceptance criteria (frozen)\n${criteria(ctx.goal)}`, protected: true },
      { text: receipts.text, protected: false },
      ...packetBlocks(executorPackets, ctx.marker, receipts.lines),
    ],
    STAGE_PROMPT_MAX_BYTES,
  );
}

export function executePrompt(ctx: StageContext, subtasks: readonly TaskPacket[]): string {
  return composePrompt(
    [
      {
        text: [
          "# Role: executor",
          "Do the subtask(s) below in the employee's workspace. Return one packet: what you did, where the evidence is, what is unresolved.",
          "A claim with no evidence reference belongs in open_questions, not findings. Declare every file you wrote in artifacts.",
          handoffRule(ctx, "executor", "verifier"),
        ].join("\n"),
        protected: true,
      },
      ...packetBlocks(subtasks, ctx.marker),
    ],
    STAGE_PROMPT_MAX_BYTES,
  );
}

/** `<tool_activity>`: one line per tool; an unknown window says so instead of looking like "no tools". */
export function toolActivityDigest(results: readonly (TeamStageResult | undefined)[]): string {
  const reported = results.filter(
    (r): r is TeamStageResult & { tool_activity: NonNullable<TeamStageResult["tool_activity"]> } => r?.tool_activity !== undefined,
  );
  if (reported.length === 0)
    return "<tool_activity>\n(tool activity window unknown: no executor reported its tool calls)\n</tool_activity>";
  const totals = new Map<string, { ok: number; err: number }>();
  for (const r of reported)
    for (const t of r.tool_activity) {
      const cur = totals.get(t.name) ?? { ok: 0, err: 0 };
      totals.set(t.name, { ok: cur.ok + t.ok, err: cur.err + t.err });
    }
  const lines = [...totals.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([name, t]) => `${neutralize(name)}: ${t.ok} ok, ${t.err} err`);
  const partial =
    reported.length < results.length ? [`(${results.length - reported.length} executor(s) reported no tool activity window)`] : [];
  return `<tool_activity>\n${[...(lines.length ? lines : ["(no tool calls)"]), ...partial].join("\n")}\n</tool_activity>`;
}

const shortHash = (h: string) => `${h.slice(0, 8)}…`;

/** One receipt line, as in seed 002: `notes/a.md 128B sha256=3f2a… exists`. */
export function receiptLine(r: NonNullable<TeamStageResult["artifact_receipts"]>[number]): string {
  const size = r.bytes !== undefined ? ` ${r.bytes}B` : "";
  const hash = r.sha256 ? ` sha256=${shortHash(r.sha256)}` : "";
  switch (r.state) {
    case "exists":
      return `${r.path}${size}${hash} exists`;
    case "mismatch":
      return `${r.path}${size}${hash} mismatch${r.declared_sha256 ? ` (declared ${shortHash(r.declared_sha256)})` : ""}`;
    default:
      return `${r.path} ${r.state}`;
  }
}

export function receiptsBlock(results: readonly (TeamStageResult | undefined)[]): { text: string; lines: Map<string, string> } {
  const lines = new Map<string, string>();
  for (const r of results) for (const receipt of r?.artifact_receipts ?? []) lines.set(receipt.path, receiptLine(receipt));
  const body = lines.size ? [...lines.values()].map(neutralize).join("\n") : "(no artifact was declared)";
  return { text: `<artifact_receipts>\n${body}\n</artifact_receipts>`, lines };
}

export function verifyPrompt(
  ctx: StageContext,
  executorPackets: readonly TaskPacket[],
  executorResults: readonly (TeamStageResult | undefined)[],
): string {
  const receipts = receiptsBlock(executorResults);
  return composePrompt(
    [
      {
        text: [
          "# Role: verifier",
          "Judge independently whether the work meets every acceptance criterion. Only `exists` receipts confirm a file; a missing or mismatched one is a failed observation.",
          'Answer with JSON only: {"verdict":"PASS"|"FAIL","reasons":["…"]}. On FAIL, the reasons name the gaps a repair must close.',
          handoffRule(ctx, "verifier", "executor") + " (only to describe gaps, and only on FAIL)",
        ].join("\n"),
        protected: true,
      },
      { text: `## Acceptance criteria (frozen)\n${criteria(ctx.goal)}`, protected: true },
      { text: toolActivityDigest(executorResults), protected: false },
      { text: receipts.text, protected: false },
      ...packetBlocks(executorPackets, ctx.marker, receipts.lines),
    ],
    STAGE_PROMPT_MAX_BYTES,
  );
}

export function repairPrompt(
  ctx: StageContext,
  subtasks: readonly TaskPacket[],
  gaps: readonly TaskPacket[],
  reasons: readonly string[],
): string {
  return composePrompt(
    [
      {
        text: [
          "# Role: executor (repair pass)",
          "The verifier failed the work. Close exactly the gaps below; do not redo or widen the work.",
          handoffRule(ctx, "executor", "verifier"),
        ].join("\n"),
        protected: true,
      },
      {
        text: `## Gaps named by the verifier\n${reasons.length ? reasons.map((r) => `- ${neutralize(r)}`).join("\n") : "(see the gap packets)"}`,
        protected: false,
      },
      ...packetBlocks(gaps, ctx.marker),
      ...packetBlocks(subtasks, ctx.marker),
    ],
    STAGE_PROMPT_MAX_BYTES,
  );
}
