/** The document's tags, one per resource, in the order a reader meets them. */
export const API_TAGS = [
  { name: "health", description: "Liveness and what this deployment runs." },
  { name: "employees", description: "AI employees: create, read, goals, conversations, evolution, memory and wiki." },
  { name: "tasks", description: "Tasks and their routing, settlement and role ledgers." },
  { name: "routines", description: "Scheduled work of an employee: each slot of a schedule opens a goal from a template." },
  { name: "approvals", description: "The human approval broker: fail-closed decisions by named managers." },
  { name: "topology", description: "Semi-automatic topology evolution: reroute proposals, overrides, observation, rollback." },
  { name: "team", description: "Team-as-Agent: planner, executors and verifier inside one employee." },
  { name: "conversations", description: "Conversations, the prediction engine and the evolution engine's inputs." },
  { name: "eval", description: "Evaluation suites and the capability matrix." },
  { name: "cost", description: "Cost by role and usage." },
  { name: "budgets", description: "Monthly budgets per employee, project and company: spend, state, lifting." },
  { name: "council", description: "The AI council: proposals, sessions, dialog, votes, principles." },
  { name: "governance", description: "Council terms and governance state." },
  { name: "projects", description: "Official projects and their lifecycle." },
  { name: "swarm", description: "Swarm tasks for the open node swarm." },
  { name: "nodes", description: "Swarm nodes: registration, heartbeats, reputation." },
  { name: "a2a", description: "The EvoMap node protocol (gep-a2a) facade." },
  { name: "runner", description: "The runner protocol: leases, acknowledgements, results." },
  { name: "events", description: "The activity feed, as pages and as Server-Sent Events." },
  { name: "audit", description: "The tamper-evident audit trail and its public verification." },
  { name: "config", description: "Config sections: effective values, validated updates." },
  { name: "integrations", description: "Slack and GitHub integrations." },
  { name: "admin", description: "Operators, runner tokens, nodes, jobs, ticks and the test clock." },
  { name: "console", description: "The web console (HTML, session cookie)." },
  { name: "pages", description: "Public observation pages (HTML) and their assets." },
  { name: "reference", description: "This document and its interactive reference." },
];

const PREFIXES: readonly [prefix: string, tag: string][] = [
  ["/v1/public/events", "events"],
  ["/v1/public/audit", "audit"],
  ["/.well-known", "audit"],
  ["/openapi.json", "reference"],
  ["/docs", "reference"],
  ["/assets", "pages"],
  ["/console", "console"],
  ["/a2a", "a2a"],
];

/** An operation's resource tag: `/v1/<resource>/…` names it; the few other roots are listed. */
export function tagOfPath(path: string): string {
  for (const [prefix, tag] of PREFIXES) if (path === prefix || path.startsWith(`${prefix}/`)) return tag;
  const resource = /^\/v1\/([a-z]+)/.exec(path)?.[1];
  if (resource && API_TAGS.some((t) => t.name === resource)) return resource;
  return "pages";
}
