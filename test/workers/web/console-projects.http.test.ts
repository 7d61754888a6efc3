import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setForgeTransport } from "../../../src/projects/forge/instance";
import { call, createOperator } from "../../factories";
import type { GithubStandin } from "../../factories/github-standin";
import { eligibleNode } from "../../factories/nodes";
import { DECOMPOSITION, decompose, insertProject, project, useGithubStandin } from "../../factories/projects";
import { login, web } from "../../factories/web";

let standin: GithubStandin;
beforeAll(async () => {
  standin = await useGithubStandin();
});
afterAll(() => setForgeTransport(undefined));

/** The decomposition form's fields for tasks on the given rows. */
function rowsForm(rows: Record<number, { title?: string; signals?: string; weight?: string; body?: string }>) {
  const form: Record<string, string> = {};
  for (const [i, t] of Object.entries(rows)) for (const [k, v] of Object.entries(t)) form[`tasks.${i}.${k}`] = v;
  return form;
}

/** An active project whose first task a node has claimed and completed. */
async function completedTask(name: string) {
  const id = await insertProject("approved", { name, repo_name: name });
  expect((await decompose(id, DECOMPOSITION)).status).toBe(200);
  const taskId = (await project(id)).tasks[0].task_id as string;
  const node = await eligibleNode(`${name}-solver`, 45);
  expect((await call(`/v1/swarm/tasks/${taskId}/claim`, { token: node.token, method: "POST" })).status).toBe(200);
  const done = await call(`/v1/swarm/tasks/${taskId}/complete`, { token: node.token, body: { summary: "Done, reviewed and tested." } });
  expect(done.status, JSON.stringify(done.body)).toBe(200);
  return { id, taskId, node };
}

describe("the console's projects", () => {
  it("lists projects; a viewer reads them without forms, a manager gets the moves and the decomposition form", async () => {
    const id = await insertProject("approved", { name: "cp-listed" });
    const viewer = await login(await createOperator("viewer", "cp-viewer"));
    const list = await web("/console/projects", { cookie: viewer.cookie });
    expect(list.status).toBe(200);
    expect(list.text).toContain(`href="/console/projects/${id}"`);
    expect(list.text).toContain('href="/console/projects" aria-current="page"');
    const viewed = await web(`/console/projects/${id}`, { cookie: viewer.cookie });
    expect(viewed.status).toBe(200);
    expect(viewed.text).not.toContain('id="project-move"');
    expect(viewed.text).not.toContain('id="decomposition-form"');

    const mgr = await login(await createOperator("manager", "cp-manager"));
    const page = await web(`/console/projects/${id}`, { cookie: mgr.cookie });
    // From approved a manager may only archive (the decomposition makes it active).
    expect(page.text).toMatch(/<select id="project-to" name="to"><option value="archived">archived<\/option><\/select>/);
    expect(page.text).toContain('id="decomposition-form"');
    expect(page.text).toContain('name="tasks.9.title"');
    expect((await web("/console/projects/proj_0000000000000000", { cookie: mgr.cookie })).status).toBe(404);
  });

  it("refuses a bad decomposition with each problem on the row it came from, then takes a good one and the project goes active", async () => {
    const id = await insertProject("approved", { name: "cp-decomp", repo_name: "cp-decomp" });
    const mgr = await login(await createOperator("manager", "cp-decomposer"));
    // Row 1 is left empty: the second task submitted is row 2, and its problems land there.
    const bad = await web(`/console/projects/${id}/decomposition`, {
      cookie: mgr.cookie,
      form: {
        _csrf: mgr.csrf,
        ...rowsForm({ 0: { title: "Design it", signals: "design", weight: "0.3" }, 2: { signals: "code", weight: "lots" } }),
      },
    });
    expect(bad.status).toBe(422);
    expect(bad.text).toContain('data-code="validation_failed"');
    expect(bad.text).toMatch(/id="decomp-2-title"[^>]*aria-invalid="true"/);
    expect(bad.text).toMatch(/<ul class="field-errors" id="decomp-2-weight-errors"><li>[^<]*expected number/);
    expect(bad.text).not.toMatch(/id="decomp-0-title"[^>]*aria-invalid/);
    expect(bad.text).toContain('name="tasks.2.weight" value="lots"');

    const heavy = await web(`/console/projects/${id}/decomposition`, {
      cookie: mgr.cookie,
      form: {
        _csrf: mgr.csrf,
        ...rowsForm({ 0: { title: "A", signals: "a", weight: "0.5" }, 1: { title: "B", signals: "b", weight: "0.5" } }),
      },
    });
    expect(heavy.status).toBe(422);
    expect(heavy.text).toContain("weights must sum to at most 0.85");
    expect(await project(id)).toMatchObject({ status: "approved", tasks: [] });

    const good = await web(`/console/projects/${id}/decomposition`, {
      cookie: mgr.cookie,
      form: {
        _csrf: mgr.csrf,
        ...rowsForm({
          0: { title: "Design the runner", signals: "design, runner", weight: "0.35", body: "Reviewed." },
          3: { title: "Write the docs", signals: "docs", weight: "0.2" },
        }),
      },
    });
    expect(good.status).toBe(303);
    expect(good.headers.get("location")).toBe(`/console/projects/${id}`);
    const after = await project(id);
    expect(after.status).toBe("active");
    expect(after.tasks.map((t: { title: string; signals: string[] }) => [t.title, t.signals])).toEqual([
      ["Design the runner", ["design", "runner"]],
      ["Write the docs", ["docs"]],
    ]);
    expect(after.repository.state).toBe("ready");
    standin.assertClean();
    // An active project has no decomposition form any more, and a second submission is refused.
    const again = await web(`/console/projects/${id}/decomposition`, {
      cookie: mgr.cookie,
      form: {
        _csrf: mgr.csrf,
        ...rowsForm({ 0: { title: "X", signals: "x", weight: "0.1" }, 1: { title: "Y", signals: "y", weight: "0.1" } }),
      },
    });
    expect(again.status).toBe(409);
    expect(again.text).not.toContain('id="decomposition-form"');
    expect((await project(id)).tasks).toHaveLength(2);
  });

  it("moves a project through the form, and refuses a move a manager does not make (409) without changing it", async () => {
    const id = await insertProject("active", { name: "cp-move" });
    const mgr = await login(await createOperator("manager", "cp-mover"));
    const moved = await web(`/console/projects/${id}/transition`, { cookie: mgr.cookie, form: { _csrf: mgr.csrf, to: "completed" } });
    expect(moved.status).toBe(303);
    expect((await project(id)).status).toBe("completed");
    const illegal = await web(`/console/projects/${id}/transition`, { cookie: mgr.cookie, form: { _csrf: mgr.csrf, to: "active" } });
    expect(illegal.status).toBe(409);
    expect(illegal.text).toContain('data-code="illegal_transition"');
    expect((await project(id)).status).toBe("completed");
    const none = await web(`/console/projects/${id}/transition`, { cookie: mgr.cookie, form: { _csrf: mgr.csrf, to: "" } });
    expect(none.status).toBe(422);
    const viewer = await login(await createOperator("viewer", "cp-move-viewer"));
    expect(
      (await web(`/console/projects/${id}/transition`, { cookie: viewer.cookie, form: { _csrf: viewer.csrf, to: "archived" } })).status,
    ).toBe(403);
    expect((await project(id)).status).toBe("completed");
  });

  it("queues finished work for verification; two verifies at once credit the completer once, the loser told on its row", async () => {
    const { id, taskId, node } = await completedTask("cp-verify");
    const mgr = await login(await createOperator("manager", "cp-verifier"));
    const list = await web("/console/projects", { cookie: mgr.cookie });
    expect(list.text).toMatch(new RegExp(`id="swarm-${taskId}"[\\s\\S]*action="/console/swarm/tasks/${taskId}/verify"`));

    const back = `/console/projects/${id}`;
    const [a, b] = await Promise.all(
      [1, 2].map(() => web(`/console/swarm/tasks/${taskId}/verify`, { cookie: mgr.cookie, form: { _csrf: mgr.csrf, back } })),
    );
    expect([a!.status, b!.status].sort()).toEqual([303, 409]);
    const won = a!.status === 303 ? a! : b!;
    const lost = a!.status === 303 ? b! : a!;
    expect(won.headers.get("location")).toBe(back);
    expect(lost.text).toContain('data-code="conflict"');
    expect(lost.text).toContain("already verified");
    const ledger = (await call(`/v1/nodes/${node.node_id}/reputation?limit=500`, { token: null })).body.entries as {
      source: string;
      reference: string;
    }[];
    expect(ledger.filter((e) => e.source === "task_completed" && e.reference === taskId)).toHaveLength(1);
    const page = await web(back, { cookie: mgr.cookie });
    expect(page.text).toContain(`verified by <code>`);
    expect((await web("/console/projects", { cookie: mgr.cookie })).text).not.toContain(`id="swarm-${taskId}"`);
  });

  it("sends a verify back only to a projects page, and refuses a viewer", async () => {
    const { taskId } = await completedTask("cp-back");
    const viewer = await login(await createOperator("viewer", "cp-verify-viewer"));
    expect(
      (
        await web(`/console/swarm/tasks/${taskId}/verify`, {
          cookie: viewer.cookie,
          form: { _csrf: viewer.csrf, back: "/console/projects" },
        })
      ).status,
    ).toBe(403);
    expect((await call(`/v1/swarm/tasks/${taskId}`, { token: null })).body.verified_at).toBeNull();
    const mgr = await login(await createOperator("manager", "cp-back-manager"));
    const res = await web(`/console/swarm/tasks/${taskId}/verify`, {
      cookie: mgr.cookie,
      form: { _csrf: mgr.csrf, back: "https://evil.example/" },
    });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/console/projects");
  });
});
