import chromium from "@sparticuz/chromium";
import { chromium as pw, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, startRunner, startWorker, type RunnerProcess } from "./stack";

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

// What the model (the fake `claude` on the runner's PATH) answers to the decomposition prompt.
const DECOMPOSITION = {
  tasks: [
    { title: "Design the runner", signals: ["design"], weight: 0.35 },
    { title: "Implement the fixtures", signals: ["fixtures", "cli"], weight: 0.3 },
    { title: "Write the contributor docs", signals: ["docs"], weight: 0.2 },
  ],
};

const PLAN =
  "Build a shared testing framework for all agents: a runner, fixtures for the common model CLIs, a reporter that publishes results to the council trail, and documentation for contributors. Each part ships on its own.";

let seq = 0;
const envelope = (type: string, sender: string, payload: Record<string, unknown>) => ({
  protocol: "gep-a2a",
  protocol_version: "1.0.0",
  message_type: type,
  message_id: `msg_${Date.now()}_${seq++}`,
  sender_id: sender,
  timestamp: new Date().toISOString(),
  payload,
});
const hex16 = () => [...crypto.getRandomValues(new Uint8Array(8))].map((b) => b.toString(16).padStart(2, "0")).join("");

describe("an official project through the whole stack, EvoMap nodes speaking /a2a", () => {
  let stack: Awaited<ReturnType<typeof startWorker>>;
  let runner: RunnerProcess;
  let browser: Browser | undefined;

  beforeAll(async () => {
    stack = await startWorker();
    const created = await stack.api("/v1/admin/runners", { body: { name: "e2e-projects" } });
    runner = startRunner(stack.base, created.body.token, { FAKE_CLAUDE_ANSWER: JSON.stringify(DECOMPOSITION) });
  });

  afterAll(async () => {
    await browser?.close();
    await runner?.stop();
    await stack?.close();
  });

  it("proposes, deliberates and approves a project over /a2a; the real runner decomposes it (fake claude) and nodes work its tasks", async () => {
    const { api } = stack;
    expect((await api("/v1/config/projects", { method: "PUT", body: { decomposition_runtime: "claude" } })).status).toBe(200);
    const node = async (model: string, reputation: number) => {
      const sender = `node_${hex16()}`;
      // an EvoMap client's first hello carries no Authorization header at all
      const res = await fetch(`${stack.base}/a2a/hello`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(envelope("hello", sender, { model })),
      });
      const hello = { status: res.status, body: (await res.json()) as any };
      expect(hello.status, JSON.stringify(hello.body)).toBe(201);
      expect(hello.body.node_id).toBe(sender);
      await api(`/v1/admin/nodes/${sender}`, { method: "PATCH", body: { reputation } });
      const beat = await api("/a2a/heartbeat", { token: hello.body.node_secret, body: { sender_id: sender } });
      expect(beat.body.status).toBe("ok");
      return { id: sender, token: hello.body.node_secret as string };
    };
    const members = [];
    for (let i = 0; i < 5; i++) members.push(await node("claude-sonnet-4", 50));
    const proposer = await node("claude-opus-4", 65);

    const proposed = await api("/a2a/project/propose", {
      token: proposer.token,
      body: {
        sender_id: proposer.id,
        title: "Official project: shared testing framework",
        description: "A shared testing framework for the swarm.",
        repo_name: "swarm-testing",
        plan: PLAN,
      },
    });
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(201);
    expect(proposed.body.status).toBe("diverge"); // reputation ≥ 60: seconded automatically
    const { deliberation_id: id, project_id: projectId } = proposed.body;
    const say = (m: { id: string; token: string }, body: Record<string, unknown>) =>
      api("/a2a/dialog", { token: m.token, body: { sender_id: m.id, deliberation_id: id, ...body } });
    const step = async () => {
      await api("/v1/admin/clock", { body: { advance_ms: 11_000 } });
      await api("/v1/admin/ticks/council", { method: "POST" });
    };
    for (const m of members) expect((await say(m, { dialog_type: "assess", content: "Sound plan." })).status).toBe(201);
    await step();
    for (const m of members) expect((await say(m, { dialog_type: "develop", content: "Ship it in parts." })).status).toBe(201);
    await step();
    expect((await api(`/a2a/council/${id}`)).body.phase).toBe("voting");
    for (const m of members) {
      const v = await say(m, { dialog_type: "vote", content: { vote: "approve", confidence: 0.9, conditions: [], reasoning: "useful" } });
      expect(v.status, JSON.stringify(v.body)).toBe(201);
    }
    await step();

    // the real runner writes the synthesis (offline) and then the decomposition (the fake claude's JSON)
    const active = await until("the project to become active", async () => {
      const p = (await api(`/a2a/project/${projectId}`)).body;
      return p.status === "active" ? p : undefined;
    });
    expect(active.decomposition).toMatchObject({ state: "done", source: "model", attempts: 1 });
    expect(active.tasks.map((t: { title: string; weight: number }) => [t.title, t.weight])).toEqual([
      ["Design the runner", 0.35],
      ["Implement the fixtures", 0.3],
      ["Write the contributor docs", 0.2],
    ]);
    const job = await api(`/v1/admin/jobs/${active.decomposition.job_id}`);
    expect(job.body).toMatchObject({ status: "completed", kind: "utility", result: { runtime: "claude" } });
    // no GitHub here: the repository waits, saying why
    expect(active.repository).toMatchObject({ state: "unconfigured", reason: expect.stringContaining("github_org") });

    // a member claims and completes the first task through /a2a; a bare completion (no recorded commit)
    // earns nothing until a manager verifies it (the reputation policy: credit needs verified work)
    const solver = members[0]!;
    const task = active.tasks[0].task_id;
    expect((await api("/a2a/task/claim", { token: solver.token, body: { node_id: solver.id, task_id: task } })).status).toBe(200);
    const done = await api("/a2a/task/complete", {
      token: solver.token,
      body: { node_id: solver.id, task_id: task, summary: "Designed and reviewed." },
    });
    expect(done.body).toMatchObject({ status: "completed", completed_by: solver.id });
    const before = (await api(`/v1/nodes/${solver.id}`)).body.reputation;
    expect((await api(`/v1/events?type=swarm_task.credited&subject=${solver.id}`)).body.events).toHaveLength(0);
    // A manager verifies it in the console (Chromium): the finished work waits on /console/projects.
    const dropped = new Set(["--disable-web-security", "--allow-running-insecure-content", "--single-process"]);
    browser = await pw.launch({
      executablePath: await chromium.executablePath(),
      args: chromium.args.filter((a) => !dropped.has(a)),
      headless: true,
    });
    const page = await (await browser.newContext({ viewport: { width: 390, height: 844 }, locale: "en-US" })).newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(`${page.url()}: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error") errors.push(`${page.url()}: ${m.text()}`);
    });
    await page.goto(`${stack.base}/console/projects`);
    await page.getByLabel("Operator token").fill(ADMIN_TOKEN);
    await page.getByRole("button", { name: "Log in" }).click();
    await page.waitForURL(/\/console\/projects$/);
    const row = page.locator(`#swarm-${task}`);
    expect(await row.textContent()).toContain("Designed and reviewed.");
    await row.getByRole("button", { name: "Verify the work" }).click();
    await page.waitForURL(/\/console\/projects$/);
    expect(await page.locator(`#swarm-${task}`).count()).toBe(0);
    expect((await api(`/v1/nodes/${solver.id}`)).body.reputation).toBe(before + 4);
    // The project's page: the task verified, and the manager's moves (an active project completes or archives).
    await page.locator(`a[href="/console/projects/${projectId}"]`).first().click();
    expect(await page.locator(`#swarm-${task}`).textContent()).toContain("verified by");
    expect(await page.locator("#project-to option").allTextContents()).toEqual(["completed", "archived"]);
    await page.selectOption("#project-to", "completed");
    await page.getByRole("button", { name: "Move the project" }).click();
    await page.waitForSelector('#project-state [data-status="completed"]');
    expect((await api(`/v1/projects/${projectId}`)).body.status).toBe("completed");
    const width = (await page.evaluate("document.documentElement.scrollWidth")) as number;
    expect(width).toBeLessThanOrEqual(390);
    expect(errors).toEqual([]);
    const ledger = (await api(`/v1/nodes/${solver.id}/reputation`)).body;
    expect(JSON.stringify(ledger)).toContain("task_completed");
  });
});
