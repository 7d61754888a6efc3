import * as z from "zod";
import { estimateTokens } from "./selection";

/**
 * The skill lifecycle's rules (seed 003 §5.1 step 5 "diagnose → activate/deactivate → track lift",
 * §7 `skill_*` keys): pure functions of a skill's counters and the close's numbers. The store
 * (skills-store.ts) loads and saves; nothing here touches D1.
 */

/** Uses with a baseline a skill needs before a negative lift may deactivate it (one bad conversation is noise). */
export const MIN_USES_FOR_DEACTIVATION = 5;
/** How many of the employee's latest closed conversations make its running baseline error. */
export const BASELINE_WINDOW = 20;
/** Per-skill framing in the prompt (heading, separators), in estimated tokens. */
const SKILL_OVERHEAD_TOKENS = 8;

const text = (max: number) =>
  z
    .string()
    .trim()
    .min(1)
    .max(max)
    .refine((s) => s.isWellFormed(), "must not contain lone surrogates");

export const skillBody = z.strictObject({
  name: text(80),
  description: text(500),
  triggers: z.array(text(80)).min(1).max(20),
  body: text(8_000),
});
export type SkillInput = z.infer<typeof skillBody>;

/** What a skill's counters say about it; `lift` is unknown (null) until a use had a baseline. */
export interface SkillCounters {
  measuredUses: number;
  errorSum: number;
  baselineSum: number;
}

/**
 * Lift: how much lower the employee's composite prediction error was on the conversations the skill
 * was active in than its running baseline at each of them (positive helps, negative hurts).
 */
export function liftOf(c: SkillCounters): number | null {
  if (c.measuredUses <= 0) return null;
  return (c.baselineSum - c.errorSum) / c.measuredUses;
}

/** The employee's running baseline: the mean composite error of its latest closes; unknown with none. */
export function baselineOf(recentErrors: readonly number[]): number | null {
  if (recentErrors.length === 0) return null;
  return recentErrors.reduce((a, b) => a + b, 0) / recentErrors.length;
}

/** Whether a skill whose counters now read `c` should be switched off by the diagnose step. */
export function shouldDeactivate(c: SkillCounters): boolean {
  const lift = liftOf(c);
  return c.measuredUses >= MIN_USES_FOR_DEACTIVATION && lift !== null && lift < 0;
}

/** Whether any of a skill's trigger terms occurs in the text (case-insensitive, NFKC). */
export function triggersMatch(triggers: readonly string[], haystack: string): boolean {
  const lower = haystack.normalize("NFKC").toLowerCase();
  return triggers.some((t) => {
    const term = t.normalize("NFKC").toLowerCase().trim();
    return term.length > 0 && lower.includes(term);
  });
}

export interface PromptSkill extends SkillCounters {
  skillId: string;
  name: string;
  description: string;
  body: string;
  activatedAt: string | null;
}

export type LeftOutReason = "max_active_skills" | "token_budget";

export interface SkillSelection<S> {
  included: S[];
  left_out: { skill_id: string; reason: LeftOutReason }[];
  tokens: number;
}

/** A skill's place in the prompt order: measured non-negative lift, then unmeasured, then negative. */
function tier(lift: number | null): number {
  if (lift === null) return 1;
  return lift >= 0 ? 0 : 2;
}

/**
 * The active skills that go into the prompt: ranked by lift (highest first; an unmeasured skill
 * after every measured non-negative one and before any negative one), then by the most recent
 * activation, then by id. The first `maxSkills` are considered; each goes in if its estimated
 * tokens still fit `tokenBudget`, otherwise it is left out and the next is tried. Every skill left
 * out is named with its reason.
 */
export function selectPromptSkills<S extends PromptSkill>(skills: readonly S[], tokenBudget: number, maxSkills: number): SkillSelection<S> {
  const ranked = [...skills].sort((a, b) => {
    const la = liftOf(a);
    const lb = liftOf(b);
    return (
      tier(la) - tier(lb) ||
      (lb ?? 0) - (la ?? 0) ||
      (b.activatedAt ?? "").localeCompare(a.activatedAt ?? "") ||
      a.skillId.localeCompare(b.skillId)
    );
  });
  const out: SkillSelection<S> = { included: [], left_out: [], tokens: 0 };
  for (const [i, skill] of ranked.entries()) {
    if (i >= maxSkills) {
      out.left_out.push({ skill_id: skill.skillId, reason: "max_active_skills" });
      continue;
    }
    const cost = skillTokens(skill);
    if (out.tokens + cost > tokenBudget) {
      out.left_out.push({ skill_id: skill.skillId, reason: "token_budget" });
      continue;
    }
    out.tokens += cost;
    out.included.push(skill);
  }
  return out;
}

export function skillTokens(skill: Pick<PromptSkill, "name" | "description" | "body">): number {
  return estimateTokens(skill.name) + estimateTokens(skill.description) + estimateTokens(skill.body) + SKILL_OVERHEAD_TOKENS;
}
