import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openTeamGoal } from "../../../src/team/goals";
import { startTeamRound } from "../../../src/team/round-driver";
import { call, createOperator, createRunner, mintToken } from "../../factories";
import { leaseStages } from "../../factories/scripted-runner";
import { db, newTaskId, putTeamConfig, SEED_TEAM } from "../../factories/team";

/** An employee's memory and wiki: written by managers and the employee (through its runner), searched (FTS5) by viewers and the employee's own members. */
async function putEmployee(id: string) {
  const res = await call(`/v1/employees/${id}`, {
    method: "PUT",
    body: { name: id, runtime: "claude", model: { preferred: "claude-sonnet-4-6" } },
  });
  expect(res.status).toBe(200);
}

/** A member token of a real round working for `employee` (its planner's). */
async function memberOf(employee: string) {
  await putTeamConfig({ ...SEED_TEAM, executor_fanout: 1 });
  const taskId = newTaskId();
  const opened = await openTeamGoal(
    db(),
    {
      taskId,
      // The gate is not under test here: `always_team` (test only, seed 002) forms the team.
      employee: { id: employee, model: { runtime: "claude", preferred: "claude-sonnet-4-6" }, team: { gate: "always_team" } },
      goal: { title: "Notes", acceptance_criteria: ["a", "b", "c"] },
    },
    new Date(),
  );
  expect(opened.team).toBe("frozen");
  await startTeamRound(env, taskId, new Date());
  const runner = await createRunner(`knowledge-${employee}`);
  const [plan] = await leaseStages(runner.token, 1, { taskId });
  return plan!.payload.member_token;
}

describe("employee memory", () => {
  it("adds entries (manager) and finds them by words in any script, best match first, only the employee's own", async () => {
    await putEmployee("mika");
    await putEmployee("other");
    const add = (id: string, text: string, tags?: string[]) =>
      call(`/v1/employees/${id}/memory`, { body: { text, ...(tags ? { tags } : {}) } });
    const first = await add("mika", "The release checklist lives in docs/release.md", ["release"]);
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ memory_id: expect.stringMatching(/^mem_/), employee_id: "mika", tags: ["release"] });
    await add("mika", "オンボーディングの資料は notes フォルダにあります");
    await add("mika", "Billing is owned by the finance team");
    await add("other", "The release checklist of someone else");

    const found = (await call("/v1/employees/mika/memory?q=checklist")).body;
    expect(found.entries.map((e: any) => e.text)).toEqual(["The release checklist lives in docs/release.md"]);
    expect(found.entries[0].snippet).toContain("[checklist]");
    // Japanese has no spaces: the trigram index still finds a word inside a run of text.
    expect((await call(`/v1/employees/mika/memory?q=${encodeURIComponent("資料")}`)).body.entries).toHaveLength(1);
    expect((await call(`/v1/employees/mika/memory?q=${encodeURIComponent("オンボーディング")}`)).body.entries).toHaveLength(1);
    // Every word must match; FTS syntax in a query is just text.
    expect((await call("/v1/employees/mika/memory?q=release%20finance")).body.entries).toEqual([]);
    expect((await call(`/v1/employees/mika/memory?q=${encodeURIComponent('"OR" NEAR(x*')}`)).status).toBe(200);
    // No query: the newest first.
    expect((await call("/v1/employees/mika/memory")).body.entries.map((e: any) => e.text)[0]).toBe("Billing is owned by the finance team");
  });

  it("refuses bad input and unknown employees, and lets only managers write", async () => {
    await putEmployee("nao");
    expect((await call("/v1/employees/nao/memory", { body: { text: "" } })).status).toBe(422);
    expect((await call("/v1/employees/nao/memory", { body: { text: "x", extra: 1 } })).status).toBe(422);
    expect((await call("/v1/employees/nao/memory", { body: { text: "bad \u202e text" } })).status).toBe(422);
    expect((await call("/v1/employees/ghost/memory", { body: { text: "x" } })).status).toBe(404);
    const viewer = await createOperator("viewer", "mem-viewer");
    expect((await call("/v1/employees/nao/memory", { token: viewer, body: { text: "x" } })).status).toBe(403);
    expect((await call("/v1/employees/nao/memory", { token: viewer })).status).toBe(200);
    expect((await call("/v1/employees/nao/memory")).body.entries).toEqual([]);
  });
});

describe("search input", () => {
  it("refuses a query with a NUL or another control character (422 naming q) in memory and wiki searches, long or short", async () => {
    await putEmployee("kai");
    await call("/v1/employees/kai/memory", { body: { text: "The deploy checklist lives in ops/deploy.md" } });
    await call("/v1/employees/kai/wiki/deploy", { method: "PUT", body: { title: "Deploy", body: "The deploy checklist." } });
    for (const kind of ["memory", "wiki"]) {
      // long terms reach FTS5 MATCH, short ones a LIKE: neither may see a control character
      for (const q of ["abc%00def", "%00", "a%00", "check%00list", "deploy%01", "deploy%0Achecklist", "x%1Fy%7F"]) {
        const res = await call(`/v1/employees/kai/${kind}?q=${q}`);
        expect([res.status, res.body.code], `${kind} ${q}`).toEqual([422, "validation_failed"]);
        expect(res.body.errors, `${kind} ${q}`).toEqual([expect.objectContaining({ path: "q" })]);
      }
    }
    // ordinary queries keep working, FTS syntax included
    expect((await call("/v1/employees/kai/memory?q=checklist")).body.entries).toHaveLength(1);
    expect((await call(`/v1/employees/kai/wiki?q=${encodeURIComponent('deploy "OR" NEAR(')}`)).status).toBe(200);
  });
});

describe("employee writes", () => {
  it("lets the employee write its memory and wiki through the runner that runs it, recorded as that runner", async () => {
    await putEmployee("yui");
    const runner = await createRunner("yui-host");
    const added = await call("/v1/employees/yui/memory", {
      token: runner.token,
      body: { text: "Invoices close on the 25th", tags: ["billing"] },
    });
    expect(added.status).toBe(201);
    const page = await call("/v1/employees/yui/wiki/billing", {
      method: "PUT",
      token: runner.token,
      body: { title: "Billing", body: "Close on the 25th." },
    });
    expect(page.status).toBe(201);
    const trail = (await call("/v1/events?type=employee.&subject=yui")).body.events;
    expect(trail.map((e: any) => [e.type, e.payload.by])).toEqual(
      expect.arrayContaining([
        ["employee.memory_added", runner.id],
        [expect.stringMatching(/^employee\.wiki/), runner.id],
      ]),
    );
    expect((await call("/v1/employees/yui/memory?q=invoices")).body.entries).toHaveLength(1);
    // a node is not anyone's host
    const node = await call("/v1/nodes", { token: null, body: { name: "not-a-host", model_tier: 3 } });
    expect((await call("/v1/employees/yui/memory", { token: node.body.node_secret, body: { text: "x" } })).status).toBe(403);
  });
});

describe("employee wiki", () => {
  it("creates and replaces pages by slug, reads them, and searches titles and bodies", async () => {
    await putEmployee("ren");
    const created = await call("/v1/employees/ren/wiki/first-week", {
      method: "PUT",
      body: { title: "First week", body: "Day one: accounts." },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ slug: "first-week", revision: 1, created: true });
    const replaced = await call("/v1/employees/ren/wiki/first-week", {
      method: "PUT",
      body: { title: "First week", body: "Day one: accounts. Day two: the onboarding tour." },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ revision: 2, created: false });
    await call("/v1/employees/ren/wiki/billing", { method: "PUT", body: { title: "Billing", body: "Invoices go out monthly." } });

    expect((await call("/v1/employees/ren/wiki/first-week")).body).toMatchObject({
      title: "First week",
      body: expect.stringContaining("onboarding tour"),
    });
    const hits = (await call("/v1/employees/ren/wiki?q=onboarding")).body.pages;
    expect(hits).toEqual([
      expect.objectContaining({ slug: "first-week", title: "First week", snippet: expect.stringContaining("[onboarding]") }),
    ]);
    // The old body is no longer indexed.
    expect((await call("/v1/employees/ren/wiki?q=accounts.%20Day%20two")).body.pages).toHaveLength(1);
    expect((await call("/v1/employees/ren/wiki")).body.pages.map((p: any) => p.slug)).toEqual(["billing", "first-week"]);
    expect((await call("/v1/employees/ren/wiki/nope")).status).toBe(404);
    expect((await call("/v1/employees/ren/wiki/..%2Fx", { method: "PUT", body: { title: "x", body: "y" } })).status).toBe(422);
  });
});

describe("member reads", () => {
  it("let a role member read its own employee's memory and wiki with its member token, and nobody else's", async () => {
    await putEmployee("sora");
    await putEmployee("taro");
    await call("/v1/employees/sora/memory", { body: { text: "Sora keeps notes in notes/" } });
    await call("/v1/employees/sora/wiki/guide", { method: "PUT", body: { title: "Guide", body: "How Sora works" } });
    await call("/v1/employees/taro/memory", { body: { text: "Taro's private notes" } });
    const token = await memberOf("sora");

    expect((await call("/v1/employees/sora/memory?q=notes", { token })).body.entries).toHaveLength(1);
    expect((await call("/v1/employees/sora/wiki?q=works", { token })).body.pages).toHaveLength(1);
    expect((await call("/v1/employees/sora/wiki/guide", { token })).body.title).toBe("Guide");
    for (const path of ["/v1/employees/taro/memory?q=notes", "/v1/employees/taro/wiki", "/v1/employees/taro/wiki/guide"]) {
      const res = await call(path, { token });
      expect(res.status, path).toBe(403);
    }
    // A member cannot write, and an unpinned member token reads nothing.
    expect((await call("/v1/employees/sora/memory", { token, body: { text: "x" } })).status).toBe(403);
    const unpinned = await mintToken("member", { subject: "{}" });
    expect((await call("/v1/employees/sora/memory", { token: unpinned.token })).status).toBe(403);
  });
});
