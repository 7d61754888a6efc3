import { stringify as toToml } from "smol-toml";
import { loadCase, type Suite } from "../eval/suites";
import { charLength, extractTopics } from "../prediction";
import { relevanceOf } from "./aee-measure";
import type { AddOp } from "./playbook-merge";
import { MAX_CONTENT_CHARS } from "./playbook";

/**
 * From a SOUL to the playbook (seed 003 §12.7 `playbook migrate-soul`, `eval-scaffold`): the SOUL's
 * behaviour rules drafted as playbook entries for a person to review, and as eval case drafts (TOML
 * text) for the rules no case covers yet. Pure; nothing here writes: applying a draft goes through
 * the delta merge like every other change, and a case draft is text a person files under evals/.
 */
export const MAX_RULES = 32;
const RULE_WORDS =
  /\b(?:always|never|must|should|shall|do not|don't|avoid|prefer|make sure|ensure|only|before|after|when|if)\b|(?:必ず|しない|してはいけない|禁止|常に|前に|場合)/iu;

/**
 * The rules of a SOUL: its list items and numbered items, and any other sentence-like line that
 * states a rule (always, never, must, …). Headings, blank lines, code fences and the identity line
 * are not rules. In document order, each once.
 */
export function soulRules(content: string): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  let fenced = false;
  for (const raw of content.split("\n")) {
    const line = raw.trim();
    if (line.startsWith("```")) {
      fenced = !fenced;
      continue;
    }
    if (fenced || line === "" || line.startsWith("#") || line.startsWith(">") || /^-{3,}$/.test(line)) continue;
    const item = /^(?:[-*+]|\d+[.)])\s+(.*)$/.exec(line);
    const text = (item ? item[1]! : line).replace(/\*\*|__/g, "").trim();
    if (!item && !RULE_WORDS.test(text)) continue;
    if (text.length < 8 || seen.has(text.toLowerCase())) continue;
    seen.add(text.toLowerCase());
    out.push(text);
    if (out.length >= MAX_RULES) break;
  }
  return out;
}

function caseText(suites: readonly Suite[], ref: string): string {
  const [domain, id] = ref.split("/");
  const c = suites.find((s) => s.domain === domain)?.cases.find((x) => x.id === id);
  return c ? [c.title ?? "", c.prompt, ...c.acceptance_criteria].join("\n") : "";
}

/** The shipped case closest to a rule by shared keywords, when any shares one. */
export function suggestCase(rule: string, suites: readonly Suite[]): { ref: string; relevance: number } | null {
  let best: { ref: string; relevance: number } | null = null;
  for (const s of suites)
    for (const c of s.cases) {
      const ref = `${c.domain}/${c.id}`;
      const r = relevanceOf([rule], caseText(suites, ref));
      if (r !== null && r > 0 && (!best || r > best.relevance)) best = { ref, relevance: r };
    }
  return best;
}

export interface MigrationDraft {
  rule: string;
  /** The add op a person reviews and may send to `…/migrate-soul/apply` as is or changed. */
  op: AddOp;
  /** The eval case suggested for it (a keyword match, not a judgement): review it. */
  suggested_case: { ref: string; relevance: number } | null;
  /** What would make the merge refuse the op as drafted (`eval_cases_empty`, `content_too_long`). */
  problems: string[];
}

export function migrationDrafts(rules: readonly string[], suites: readonly Suite[], soul: { version: number }): MigrationDraft[] {
  return rules.map((rule) => {
    const suggestion = suggestCase(rule, suites);
    const keywords = extractTopics([rule], 3);
    const problems: string[] = [];
    if (!suggestion) problems.push("eval_cases_empty");
    if (charLength(rule) > MAX_CONTENT_CHARS) problems.push("content_too_long");
    return {
      rule,
      op: {
        op: "add",
        // A rule the persona already held: carried over and refined, not explored.
        category: "optimize",
        signals_match: keywords.length ? [keywords.join("|")] : [],
        content: rule,
        eval_cases: suggestion ? [suggestion.ref] : [],
        assertions: [],
        derived_from: [{ kind: "soul_migration", id: `soul_v${soul.version}` }],
      },
      suggested_case: suggestion,
      problems,
    };
  });
}

function slug(text: string, taken: Set<string>): string {
  const base =
    text
      .normalize("NFKD")
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .split("-")
      .filter(Boolean)
      .slice(0, 6)
      .join("-")
      .slice(0, 48) || "rule";
  let id = base;
  for (let n = 2; taken.has(id); n++) id = `${base}-${n}`;
  taken.add(id);
  return id;
}

export interface CaseDraft {
  rule: string;
  /** Where a person would file it once reviewed (the Worker writes nothing). */
  path: string;
  toml: string;
  /** Whether the draft as written loads as a case (its placeholders are still to be replaced). */
  loads: boolean;
  load_errors: string[];
}

/**
 * Eval case drafts for a SOUL's rules: one TOML case per rule, with the rule as its acceptance
 * criterion and a placeholder assertion (a keyword of the rule) a person replaces with a real check.
 * Each draft is loaded with the case loader, so what it says about itself is true.
 */
export function scaffoldCases(rules: readonly string[], employeeId: string, soul: { version: number }): CaseDraft[] {
  const domain = `soul-${employeeId
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "-")
    .slice(0, 40)}`.replace(/-+$/g, "");
  const taken = new Set<string>();
  return rules.map((rule) => {
    const id = slug(rule, taken);
    const keyword = extractTopics([rule], 1)[0] ?? rule.split(/\s+/)[0] ?? "rule";
    const body = toToml({
      case: {
        title: `SOUL rule: ${rule}`.slice(0, 120),
        prompt: `A user writes to ${employeeId} in a situation where this rule of its SOUL decides the answer. Replace this paragraph with that situation, in the user's words.`,
        acceptance_criteria: [`The reply follows the rule: ${rule}`.slice(0, 1_024)],
      },
      expect: [{ kind: "text_contains", text: keyword }],
    });
    const toml = [
      `# Draft eval case from ${employeeId}'s SOUL (version ${soul.version}). Review every line: the prompt is a placeholder`,
      `# and the assertion only checks a keyword of the rule. File it as evals/${domain}/${id}.toml once it tests the rule.`,
      body,
    ].join("\n");
    const loaded = loadCase({ path: `evals/${domain}/${id}.toml`, text: toml });
    return {
      rule,
      path: `evals-drafts/${domain}/${id}.toml`,
      toml,
      loads: loaded.ok,
      load_errors: loaded.ok ? [] : loaded.errors.map((e) => `${e.field}: ${e.message}`),
    };
  });
}
