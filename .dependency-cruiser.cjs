/**
 * The layering of crewplane (issue 20), checked in `npm test` (`npm run check:deps`).
 * Each rule says why it exists; a broken rule names itself and the import that broke it.
 *
 *   src/workers/          the composition root: routers, ticks, config sections, owner handlers,
 *                         queue consumers and the Durable Object classes' exports; knows every feature
 *   src/<feature>/        council, projects, team, tasks, … : may use the layers below, not the root
 *   src/durable-objects/  one class per file, reached through its `*-rpc.ts` (accessor, RPC types)
 *   src/jobs, src/queues  the runner job and queue vocabularies: no feature
 *   src/db, src/lib       data and plumbing: no feature
 */
const FEATURES =
  "^src/(a2a|approvals|audit|conversations|council|eval|evolution|knowledge|nodes|prediction|projects|routines|spend|tasks|team|topology)/";
const LOW = "^src/(db|lib|jobs|queues)/";
// A Durable Object class file: any file in src/durable-objects that is not one of a class's parts,
// named `<class>-<part>.ts`: its RPC surface (`-rpc`), its storage schema (`-schema`), or a piece the
// class delegates to (`-outbox`, `-deadlines`). A new kind of part is added here.
const DO_CLASS = "^src/durable-objects/(?!.*-(rpc|schema|outbox|deadlines)\\.ts$)[^/]+\\.ts$";

module.exports = {
  forbidden: [
    {
      name: "no-runtime-cycle",
      comment:
        "A runtime import cycle works only while every name crossing it is a hoisted function; a const or class in the loop is undefined at import time. Break it by moving what both sides need down a layer.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "low-layers-know-no-feature",
      comment:
        "src/db, src/lib, src/jobs and src/queues are what features build on; importing a feature from them at runtime makes every feature depend on every other. Move the shared piece down, or pass it in from src/workers.",
      severity: "error",
      from: { path: LOW },
      to: { path: FEATURES, dependencyTypesNot: ["type-only"] },
    },
    {
      name: "db-is-the-bottom",
      comment:
        "src/db (the schema, the client) is the layer everything stands on: it imports nothing else of ours at runtime, so a migration or a schema change never depends on feature code. A vocabulary the schema needs (runtimes) lives in src/db.",
      severity: "error",
      from: { path: "^src/db/" },
      to: { path: "^src/(?!db/)", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "low-layers-know-no-root",
      comment: "src/workers is the composition root: only entry points may import it.",
      severity: "error",
      from: { path: LOW },
      to: { path: "^src/workers/", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "features-know-no-root",
      comment:
        "A feature imported by the composition root must not import the root back (routers, ticks, the owner-handler table): that is how the runner-inbox cycle started. Put what a feature needs in its own module or a lower layer.",
      severity: "error",
      from: { path: FEATURES },
      to: { path: "^src/workers/", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "durable-object-classes-only-from-the-entry",
      comment:
        "A Durable Object is reached through its `*-rpc.ts` (accessor, input and result types). Its class file is imported at runtime by src/workers/index.ts alone, which exports it to the runtime (and by the Worker's RunnerInbox subclass beside it); anything else importing the class drags its whole module graph along.",
      severity: "error",
      from: { pathNot: "^src/workers/(index|runner-inbox)\\.ts$" },
      to: { path: DO_CLASS, dependencyTypesNot: ["type-only"] },
    },
    {
      name: "runner-inbox-knows-no-feature",
      comment:
        "The RunnerInbox is shared plumbing: leases, acks, the outbox. It tells a job's owner that the job ended through `callOwner`, which the Worker's subclass implements; it never imports a feature.",
      severity: "error",
      from: { path: "^src/durable-objects/runner-inbox" },
      to: { path: FEATURES, dependencyTypesNot: ["type-only"] },
    },
    {
      name: "team-and-tasks-apart",
      comment: "team builds on tasks; tasks must not import team back (what both need lives in tasks or below, or is passed in).",
      severity: "error",
      from: { path: "^src/tasks/" },
      to: { path: "^src/team/", dependencyTypesNot: ["type-only"] },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: false,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default", "types"] },
    exclude: { path: "node_modules" },
  },
};
