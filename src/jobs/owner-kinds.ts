/**
 * Who waits for a runner job (DESIGN.md "Model work"). A feature that submits jobs adds its kind
 * here and its handler in `src/workers/owner-handlers.ts`; the names live apart from the handlers so
 * payload schemas can validate an owner without importing every feature.
 */
export const OWNER_KINDS = [
  "admin",
  "team_round",
  "council_proposal",
  "council_session",
  "dispatch",
  "project",
  "conversation",
  "evolution_request",
  "eval_run",
  "aee_round",
  "playbook_settle",
  "gvu_round",
  "soul_consolidation",
  "team_attachments",
] as const;
export type OwnerKind = (typeof OWNER_KINDS)[number];
