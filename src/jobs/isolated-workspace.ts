import * as z from "zod";

/**
 * An isolated workspace on the runner host (issue 22, the team 2×2): `<home>/eval-workspaces/<key>/`,
 * created once as a copy of the employee's workspace with `files` written over it. A team round
 * whose goal names one works there instead of in the employee's own workspace, so four arms of one
 * case never see each other's files; a utility job naming one reads `observe_paths` from it (the
 * fixed verifier of the 2×2 judges what the arm left behind).
 */
export const WORKSPACE_KEY = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * Why `path` may not name a file in a workspace (undefined: it may). Pure; the Worker's schemas and
 * the runner, which writes and reads these paths, share it: a relative path, no NUL, no backslash,
 * no `.`, `..` or empty segment (so no leading or trailing `/`).
 */
export function workspacePathProblem(path: string): string | undefined {
  if (path.length === 0 || path.length > 256) return "must be 1 to 256 characters";
  if (path.includes("\0")) return "contains a NUL byte";
  if (path.startsWith("/")) return "is absolute";
  if (path.includes("\\")) return "contains a backslash";
  if (path.split("/").some((s) => s === "" || s === "." || s === "..")) return "has a '.', '..' or empty segment";
  return undefined;
}

/** A relative path inside a workspace (a case's fixture, an observed file). */
export const workspaceRelPath = z.string().superRefine((p, ctx) => {
  const problem = workspacePathProblem(p);
  if (problem) ctx.addIssue({ code: "custom", message: `workspace path ${JSON.stringify(p)} ${problem}` });
});

export const isolatedWorkspace = z.object({
  key: z.string().regex(WORKSPACE_KEY),
  /** Written over the copy when the workspace is created (a case's fixture). */
  files: z.record(workspaceRelPath, z.string().max(65_536)).default({}),
});
export type IsolatedWorkspace = z.infer<typeof isolatedWorkspace>;

export const observedWorkspace = z.object({
  key: z.string().regex(WORKSPACE_KEY),
  observe_paths: z.array(workspaceRelPath).max(64),
});
