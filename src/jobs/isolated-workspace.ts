import { z } from "zod";

/**
 * An isolated workspace on the runner host (issue 22, the team 2×2): `<home>/eval-workspaces/<key>/`,
 * created once as a copy of the employee's workspace with `files` written over it. A team round
 * whose goal names one works there instead of in the employee's own workspace, so four arms of one
 * case never see each other's files; a utility job naming one reads `observe_paths` from it (the
 * fixed verifier of the 2×2 judges what the arm left behind).
 */
export const WORKSPACE_KEY = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** A relative path inside a workspace: no absolute paths, no `..`, no backslashes. */
export const workspaceRelPath = z
  .string()
  .min(1)
  .max(256)
  .refine((p) => !p.startsWith("/") && !p.includes("\\") && !p.split("/").some((s) => s === ".." || s === "." || s === ""), {
    message: "must be a relative path without '.', '..' or empty segments",
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
