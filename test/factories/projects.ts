import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { getDb } from "../../src/db/client";
import { councilProposals, projects, type ProjectStatus } from "../../src/db/schema";
import { newId } from "../../src/lib/ids";
import { setForgeTransport } from "../../src/projects/forge/instance";
import { APP_ID, INSTALLATION_ID, ORG, orgStandin, type GithubStandin } from "./github-standin";
import { call } from "./index";
import { advance, council, dialog, offlineAnswer, progress, runOneJob, session } from "./council-http";
import { type TestNode } from "./nodes";

export const PLAN =
  "Build a shared testing framework for all agents: a runner, fixtures for the common model CLIs, a reporter that publishes results to the council trail, and documentation for contributors. Each part ships on its own.";

export function projectProposal(name: string, extra: Record<string, unknown> = {}) {
  return {
    title: `Official project: ${name}`,
    body: PLAN,
    kind: "project",
    project: { name, summary: `The ${name} project: a shared testing framework for the swarm.`, ...extra },
  };
}

/** Three tasks whose weights sum to exactly 0.85. */
export const DECOMPOSITION = {
  tasks: [
    { title: "Design the runner", signals: ["design", "runner"], weight: 0.35, body: "The runner's design, reviewed." },
    { title: "Implement the fixtures", signals: "fixtures,cli", weight: 0.3 },
    { title: "Write the contributor docs", signals: ["docs"], weight: 0.2 },
  ],
};

/**
 * A project row in `status`, with its proposal, written straight to D1: for tests of what happens
 * after the council (the council's own path is driven end to end in projects.http.test.ts).
 */
export async function insertProject(status: ProjectStatus, opts: { name?: string; proposer?: string; repo_name?: string } = {}) {
  const db = getDb(env.DB);
  const id = newId("proj");
  const proposalId = newId("prop");
  const at = new Date().toISOString();
  const name = opts.name ?? `project-${id.slice(5, 11)}`;
  const proposer = opts.proposer ?? `node_${"0".repeat(16)}`;
  await db.batch([
    db.insert(councilProposals).values({
      id: proposalId,
      nodeId: proposer,
      title: `Official project: ${name}`,
      body: PLAN,
      kind: "project",
      project: { name, summary: `The ${name} project.`, ...(opts.repo_name ? { repo_name: opts.repo_name } : {}) },
      status: "approved",
      prescreen: { mode: "off", status: "skipped", source: "off" },
      createdAt: at,
      updatedAt: at,
    }),
    db.insert(projects).values({
      id,
      name,
      summary: `The ${name} project.`,
      status,
      proposerId: proposer,
      proposalId,
      sessionId: `delib_${"a".repeat(16)}`,
      createdAt: at,
      updatedAt: at,
    }),
  ]);
  return id;
}

export async function project(id: string) {
  const res = await call(`/v1/projects/${id}`, { token: null });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

export async function projectsTick() {
  const res = await call("/v1/admin/ticks/projects", { method: "POST" });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.summary;
}

export async function decompose(id: string, body: unknown = DECOMPOSITION, token?: string) {
  return call(`/v1/projects/${id}/decomposition`, { body, ...(token ? { token } : {}) });
}

/** The GitHub stand-in as the Worker's GitHub (module state is shared with the Worker in this isolate). */
export async function useGithubStandin(): Promise<GithubStandin> {
  const { standin, keys } = await orgStandin();
  setForgeTransport({
    fetch: standin.fetch,
    secrets: { GITHUB_APP_ID: APP_ID, GITHUB_APP_PRIVATE_KEY: keys.privateKeyPem, GITHUB_APP_INSTALLATION_ID: String(INSTALLATION_ID) },
  });
  const res = await call("/v1/config/projects", { method: "PUT", body: { github_org: ORG } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return standin;
}

/**
 * Drives one project proposal through a real council session to its decision (seconding, diverge,
 * challenge, voting, the offline synthesis job) over /v1. `outcome` picks every member's vote.
 */
export async function councilDecides(
  proposer: TestNode,
  seats: { byId: Map<string, TestNode> } = { byId: new Map() },
  body: Record<string, unknown>,
  vote: "approve" | "reject" = "approve",
): Promise<{ sessionId: string; projectId: string }> {
  const submitted = await call("/v1/council/proposals", { token: proposer.token, body });
  expect(submitted.status, JSON.stringify(submitted.body)).toBe(201);
  const sid = submitted.body.session_id as string;
  let s = await session(sid);
  const seated = s.members
    .filter((m: { role: string }) => m.role !== "proposer")
    .map((m: { node_id: string }) => seats.byId.get(m.node_id) ?? knownSeats.get(m.node_id)!);
  expect((await dialog(seated[0]!, sid, { dialog_type: "second" })).status).toBe(201);
  await progress();
  for (const m of seated) expect((await dialog(m, sid, { dialog_type: "assess", content: "Feasible and useful." })).status).toBe(201);
  await progress();
  for (const m of seated) expect((await dialog(m, sid, { dialog_type: "develop", content: "Ship it in parts." })).status).toBe(201);
  await progress();
  s = await session(sid);
  expect(s.phase).toBe("voting");
  for (const m of seated) {
    const res = await dialog(m, sid, { dialog_type: "vote", vote, confidence: 0.9, proposal_hash: s.proposal_hash });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  await progress();
  await runOneJob(["offline"], offlineAnswer);
  s = await session(sid);
  expect(s.phase).toBe(vote === "approve" ? "approved" : "rejected");
  return { sessionId: sid, projectId: s.project_id };
}

// Every seat made in this test file: a later session may seat an earlier test's term members.
const knownSeats = new Map<string, TestNode>();

/** `council()` that remembers its nodes for `councilDecides`. */
export async function councilSeats(n: number, prefix: string) {
  const c = await council(n, prefix);
  for (const m of c.members) knownSeats.set(m.node_id, m);
  return c;
}
