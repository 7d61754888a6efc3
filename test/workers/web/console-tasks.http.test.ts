import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, createOperator } from "../../factories";
import { createTask, eventsOf, putEmployee, settle } from "../../factories/org";
import { login, web } from "../../factories/web";

/** The types of the task events about one task, oldest first. */
const typesOf = async (taskId: string) => (await eventsOf("task.")).filter((e) => e.subject === taskId).map((e) => e.type);

const taskCount = async () => (await env.DB.prepare("SELECT count(*) AS n FROM tasks").first<number>("n"))!;

describe("the tasks page's new-task form", () => {
  it("creates a task with its acceptance criteria, tags and priority, and goes on to its page", async () => {
    await putEmployee("tf-ada");
    const mgr = await login(await createOperator("manager", "tf-manager"));
    const page = await web("/console/tasks", { cookie: mgr.cookie });
    expect(page.status).toBe(200);
    expect(page.text).toContain('id="task-form"');
    expect(page.text).toContain('<option value="tf-ada">');

    const res = await web("/console/tasks", {
      cookie: mgr.cookie,
      form: {
        _csrf: mgr.csrf,
        title: "  Write the release notes  ",
        acceptance_criteria: "Lists every change\r\n\r\n  Names each author  \n",
        assignee: "tf-ada",
        mode: "goal",
        priority: "high",
        tags: "docs, release",
        rounds_left: "",
        manual: "on",
      },
    });
    expect(res.status).toBe(303);
    const id = /^\/console\/tasks\/(task_[0-9a-z]+)$/.exec(res.headers.get("location") ?? "")?.[1];
    expect(id).toBeTruthy();
    const task = (await call(`/v1/tasks/${id}`)).body;
    expect(task).toMatchObject({
      title: "Write the release notes",
      acceptance_criteria: ["Lists every change", "Names each author"],
      assigned_to: "tf-ada",
      status: "assigned",
      manual: true,
      tags: ["docs", "release"],
      priority: "high",
    });
    const shown = await web(`/console/tasks/${id}`, { cookie: mgr.cookie });
    expect(shown.status).toBe(200);
    expect(shown.text).toContain("Write the release notes");
  });

  it("refuses a bad form with each problem next to its field and creates nothing", async () => {
    await putEmployee("tf-bo");
    const mgr = await login(await createOperator("manager", "tf-manager-2"));
    const before = await taskCount();
    const res = await web("/console/tasks", {
      cookie: mgr.cookie,
      form: { _csrf: mgr.csrf, title: "   ", acceptance_criteria: "keep me", assignee: "", rounds_left: "99", manual: "on" },
    });
    expect(res.status).toBe(422);
    expect(res.text).toContain('data-code="validation_failed"');
    expect(res.text).toContain('id="task-title-errors"');
    expect(res.text).toContain('id="task-assignee-errors"');
    expect(res.text).toContain("choose the employee it is addressed to");
    expect(res.text).toContain('id="task-rounds-errors"');
    expect(res.text).toMatch(/id="task-title" name="title" required="" maxlength="300" value="   " aria-invalid="true"/);
    // The draft comes back as typed.
    expect(res.text).toContain(">keep me</textarea>");
    expect(await taskCount()).toBe(before);
  });

  it("is a manager's: a viewer sees a note instead of the form and is refused", async () => {
    await putEmployee("tf-cy");
    const viewer = await login(await createOperator("viewer", "tf-viewer"));
    const page = await web("/console/tasks", { cookie: viewer.cookie });
    expect(page.status).toBe(200);
    expect(page.text).not.toContain('id="task-form"');
    const before = await taskCount();
    const res = await web("/console/tasks", {
      cookie: viewer.cookie,
      form: { _csrf: viewer.csrf, title: "sneaky", acceptance_criteria: "x", assignee: "tf-cy", manual: "on" },
    });
    expect(res.status).toBe(403);
    expect(await taskCount()).toBe(before);
  });
});

describe("the task page's cancel", () => {
  it("settles an open task as failed through the settle route's code and records who cancelled it", async () => {
    await putEmployee("tc-ada");
    const { task_id } = await createTask({ assignee: "tc-ada" });
    const mgr = await login(await createOperator("manager", "tc-manager"));
    const page = await web(`/console/tasks/${task_id}`, { cookie: mgr.cookie });
    expect(page.text).toMatch(
      new RegExp(`<form method="post" action="/console/tasks/${task_id}/cancel" class="inline" data-confirm="[^"]+">`),
    );

    const noToken = await web(`/console/tasks/${task_id}/cancel`, { cookie: mgr.cookie, form: { confirm: "yes" } });
    expect(noToken.status).toBe(403);
    expect((await call(`/v1/tasks/${task_id}`)).body.status).toBe("assigned");

    const res = await web(`/console/tasks/${task_id}/cancel`, { cookie: mgr.cookie, form: { _csrf: mgr.csrf } });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`/console/tasks/${task_id}`);
    const task = (await call(`/v1/tasks/${task_id}`)).body;
    expect(task).toMatchObject({ status: "failed" });
    expect(await typesOf(task_id)).toEqual(expect.arrayContaining(["task.settled", "task.cancelled"]));
    // Settled: the page offers no cancel any more.
    expect((await web(`/console/tasks/${task_id}`, { cookie: mgr.cookie })).text).not.toContain(`/console/tasks/${task_id}/cancel`);
  });

  it("cancels a goal the loop is working, created from the form", async () => {
    await putEmployee("tc-dee");
    const mgr = await login(await createOperator("manager", "tc-manager-3"));
    const created = await web("/console/tasks", {
      cookie: mgr.cookie,
      form: {
        _csrf: mgr.csrf,
        title: "Tidy the wiki",
        acceptance_criteria: "No dead links",
        assignee: "tc-dee",
        mode: "goal",
        rounds_left: "2",
      },
    });
    expect(created.status).toBe(303);
    const id = created.headers.get("location")!.split("/").pop()!;
    expect((await call(`/v1/tasks/${id}`)).body).toMatchObject({ status: "assigned", manual: false });
    const res = await web(`/console/tasks/${id}/cancel`, { cookie: mgr.cookie, form: { _csrf: mgr.csrf } });
    expect(res.status).toBe(303);
    expect((await call(`/v1/tasks/${id}`)).body.status).toBe("failed");
  });

  it("answers 409 with the problem on the page for a settled task and changes nothing", async () => {
    await putEmployee("tc-bo");
    const { task_id } = await createTask({ assignee: "tc-bo" });
    expect((await settle(task_id, { status: "done" })).status).toBe(200);
    const before = (await call(`/v1/tasks/${task_id}`)).body;
    const mgr = await login(await createOperator("manager", "tc-manager-2"));
    const res = await web(`/console/tasks/${task_id}/cancel`, { cookie: mgr.cookie, form: { _csrf: mgr.csrf } });
    expect(res.status).toBe(409);
    expect(res.text).toContain('data-code="already_settled"');
    expect((await call(`/v1/tasks/${task_id}`)).body).toEqual(before);
    expect(await typesOf(task_id)).not.toContain("task.cancelled");
  });

  it("is a manager's: a viewer sees no cancel and is refused", async () => {
    await putEmployee("tc-cy");
    const { task_id } = await createTask({ assignee: "tc-cy" });
    const viewer = await login(await createOperator("viewer", "tc-viewer"));
    expect((await web(`/console/tasks/${task_id}`, { cookie: viewer.cookie })).text).not.toContain("/cancel");
    const res = await web(`/console/tasks/${task_id}/cancel`, { cookie: viewer.cookie, form: { _csrf: viewer.csrf } });
    expect(res.status).toBe(403);
    expect((await call(`/v1/tasks/${task_id}`)).body.status).toBe("assigned");
  });
});
