import * as z from "zod";
import { workspaceRelPath as workspacePath } from "../jobs/isolated-workspace";

/**
 * The eval case format (issue 22 part 1; seed 002 "何を計測するか"). One TOML file per case at
 * `evals/<domain>/<case_id>.toml`; the directory is the domain and the cluster key, the file stem the
 * case id. `[case]` holds the prompt and acceptance criteria, `[[expect]]` the deterministic assertions
 * an executor's outcome is graded by (no LLM judge), and `[transcript]` a recorded outcome a verifier
 * cell shows to the model under test, with the gold verdict it declares. Unknown keys are refused, so a
 * typo fails the load instead of silently dropping an assertion.
 */

/** Domain directories and case file stems: lower-case slugs, so ids are stable in reports and URLs. */
export const SLUG = /^[a-z0-9][a-z0-9_-]{0,63}$/;

const REGEX_FLAGS = /^[imsu]*$/;

export const EXPECT_KINDS = [
  "file_exists",
  "file_absent",
  "file_contains",
  "file_not_contains",
  "text_contains",
  "text_not_contains",
  "text_matches",
  "exit_status_is",
] as const;
export type ExpectKind = (typeof EXPECT_KINDS)[number];

const needle = z.string().min(1).max(4096);

export const expectationSchema = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("file_exists"), path: workspacePath }),
  z.strictObject({ kind: z.literal("file_absent"), path: workspacePath }),
  z.strictObject({ kind: z.literal("file_contains"), path: workspacePath, text: needle }),
  z.strictObject({ kind: z.literal("file_not_contains"), path: workspacePath, text: needle }),
  z.strictObject({ kind: z.literal("text_contains"), text: needle }),
  z.strictObject({ kind: z.literal("text_not_contains"), text: needle }),
  z.strictObject({
    kind: z.literal("text_matches"),
    pattern: z
      .string()
      .min(1)
      .max(1024)
      .refine((p) => compiles(p), { message: "must be a valid JavaScript regular expression" }),
    flags: z.string().regex(REGEX_FLAGS, "may only use the flags i, m, s, u").optional(),
  }),
  z.strictObject({ kind: z.literal("exit_status_is"), status: z.int().min(0).max(255) }),
]);
export type Expectation = z.infer<typeof expectationSchema>;

function compiles(pattern: string): boolean {
  try {
    new RegExp(pattern);
    return true;
  } catch {
    return false;
  }
}

export const GOLD_VERDICTS = ["PASS", "FAIL"] as const;
export type GoldVerdict = (typeof GOLD_VERDICTS)[number];

/**
 * A recorded outcome. `files` maps a path to its content; `missing_files` lists paths the recording
 * observed to be absent (TOML has no null). A path in neither was not observed, and an assertion on
 * it cannot be graded: the loader refuses a transcript whose gold depends on one.
 */
export const transcriptSchema = z.strictObject({
  gold: z.enum(GOLD_VERDICTS),
  text: z.string().max(65_536),
  exit_status: z.int().min(0).max(255).optional(),
  files: z.record(workspacePath, z.string().max(65_536)).optional(),
  missing_files: z.array(workspacePath).max(64).optional(),
});
export type Transcript = z.infer<typeof transcriptSchema>;

export const caseFileSchema = z.strictObject({
  case: z.strictObject({
    title: z.string().min(1).max(120).optional(),
    prompt: z.string().trim().min(1).max(16_384),
    acceptance_criteria: z.array(z.string().trim().min(1).max(1024)).min(1).max(32),
    /** Acceptance criteria a full team round is frozen with (seed: `[case] team_acceptance`, team 2×2 only). */
    team_acceptance: z.string().trim().min(1).max(4096).optional(),
  }),
  /** Files the runner writes into the fresh workspace before the run (the case's fixture). */
  workspace: z.strictObject({ files: z.record(workspacePath, z.string().max(65_536)) }).optional(),
  expect: z.array(expectationSchema).min(1).max(64),
  transcript: transcriptSchema.optional(),
});
export type CaseFile = z.infer<typeof caseFileSchema>;

/**
 * What an executor run produced, as the runner reports it: the reply text, the exit status the runner
 * recorded for the run (absent when none was), and every path in `observedPaths(expect)` mapped to its
 * content after the run, or to null when it does not exist.
 */
export interface Outcome {
  text: string;
  exit_status?: number;
  files: Readonly<Record<string, string | null>>;
}

/** The outcome a transcript records (missing files become nulls). */
export function transcriptOutcome(t: Transcript): Outcome {
  const files: Record<string, string | null> = {};
  for (const p of t.missing_files ?? []) files[p] = null;
  for (const [p, content] of Object.entries(t.files ?? {})) files[p] = content;
  return { text: t.text, ...(t.exit_status !== undefined ? { exit_status: t.exit_status } : {}), files };
}

/** The workspace paths a case's assertions read: what a runner must report in `Outcome.files`. */
export function observedPaths(expect: readonly Expectation[]): string[] {
  const paths = expect.flatMap((e) => ("path" in e ? [e.path] : []));
  return [...new Set(paths)].sort();
}
