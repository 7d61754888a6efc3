/**
 * The runtimes a runner can offer: the lowest layer that names them is the data (a task's `runtime`
 * column), so the vocabulary lives here and `src/jobs/payloads.ts` re-exports it for job payloads.
 */
export const RUNTIMES = ["offline", "claude", "codex", "antigravity", "grok"] as const;
export type Runtime = (typeof RUNTIMES)[number];
