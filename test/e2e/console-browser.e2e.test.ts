/**
 * The web console and the public pages in a real browser (issue 25 item 5): Chromium from the
 * `@sparticuz/chromium` npm package (no download, no system package) driven by `playwright-core`,
 * against the Worker under wrangler's test harness and the real runner with the fake CLIs. One
 * stack and one browser for the whole file; each flow opens its own browser contexts (one per
 * operator, as people would). No assertion is about time: every wait is for something to appear.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { join } from "node:path";
import chromium from "@sparticuz/chromium";
import { chromium as pw, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, startRunner, startWorker, type RunnerProcess } from "./stack";
import { GOAL, TEAM } from "./team-fixtures";

type Stack = Awaited<ReturnType<typeof startWorker>>;

const SHOTS = join(ROOT, ".test-results", "browser");
const WAIT = 90_000;
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

let stack: Stack;
let runner: RunnerProcess;
let browser: Browser;
const tokens = { admin: "", manager: "", viewer: "" };
const state: { approvalId?: string; sessionId?: string; taskId?: string; conversationId?: string } = {};

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = WAIT): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A browser context for one person; `login` signs it in through the login form like a person would. */
async function person(token?: string): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: "en-US" });
  const page = await context.newPage();
  const errors = watch(page);
  if (token) {
    await page.goto(`${stack.base}/console/login`);
    await page.getByLabel("Operator token").fill(token);
    await page.getByRole("button", { name: "Log in" }).click();
    await page.waitForSelector("text=Signed in as");
  }
  return { context, page, errors };
}

/** Console errors and uncaught exceptions of a page (a CSP violation is a console error too). */
function watch(page: Page): string[] {
  const errors: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(`${page.url()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => errors.push(`${page.url()}: ${e.message}`));
  return errors;
}

/** Waits until the page's live stream is open (the client script ran and the server took the stream). */
async function live(page: Page) {
  await page.waitForSelector('body[data-live-state="open"]', { timeout: WAIT });
}

/** axe-core's serious and critical findings on the page (run through the devtools protocol: the page's CSP stays on). */
async function accessibility(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const result = (await page.evaluate(`axe.run(document, { resultTypes: ["violations"] })`)) as {
    violations: { id: string; impact: string | null; nodes: { target: string[] }[] }[];
  };
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${page.url()}: ${v.id} (${v.impact}) at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

/** Visits each path: 200, no console error, no serious accessibility finding, a screenshot. */
async function sweep(label: string, paths: string[], token: string) {
  const { context, page, errors } = await person(token);
  const findings: string[] = [];
  try {
    for (const path of paths) {
      const res = await page.goto(`${stack.base}${path}`);
      expect(res?.status(), path).toBe(200);
      // The first Tab reaches the skip link, and it leads to the page's content.
      await page.keyboard.press("Tab");
      expect(await page.evaluate("document.activeElement.className"), path).toBe("skip");
      await page.keyboard.press("Enter");
      expect(await page.evaluate("document.activeElement.id"), path).toBe("main");
      if (await page.$("body[data-stream]")) await live(page);
      findings.push(...(await accessibility(page)));
      // 400 % zoom of a 1280 px window is a 320 px one: the page reflows (only data tables scroll, inside their frame).
      await page.setViewportSize({ width: 320, height: 640 });
      const overflow = (await page.evaluate("document.documentElement.scrollWidth")) as number;
      if (overflow > 320) findings.push(`${path}: ${overflow} px wide at 320 px`);
      await page.setViewportSize({ width: 390, height: 844 });
      // Ids in a path would make a new file per run: they are named by what they are.
      const generic = path
        .replace(/delib_[0-9a-f]+/, "session")
        .replace(/task_[0-9a-f]+/, "task")
        .replace(/conv_[0-9a-f]+/, "conversation");
      const name = `${label}${generic.replace(/[^a-z0-9]+/gi, "-").replace(/-$/, "")}.png`;
      await page.screenshot({ path: join(SHOTS, name), fullPage: true });
    }
    expect(errors).toEqual([]);
    expect(findings).toEqual([]);
  } finally {
    await context.close();
  }
}

const PUBLIC = ["/council", "/principles", "/projects"];
const CONSOLE = [
  "/console",
  "/console/approvals",
  "/console/topology",
  "/console/employees",
  "/console/tasks",
  "/console/matrix",
  "/console/runners",
  "/console/operators",
  "/console/spend",
  "/console/routines",
  "/console/projects",
  "/console/employees/new",
  "/console/audit",
  "/console/config",
  "/console/config/topology_evolution",
];

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  stack = await startWorker();
  const op = async (name: string, role: string) => (await stack.api("/v1/admin/operators", { body: { name, role } })).body.token as string;
  tokens.admin = await op("ada", "admin");
  tokens.manager = await op("mia", "manager");
  tokens.viewer = await op("vic", "viewer");
  expect((await stack.api("/v1/config/team", { method: "PUT", body: TEAM })).status).toBe(200);
  const runnerToken = (await stack.api("/v1/admin/runners", { body: { name: "browser-e2e" } })).body.token;
  runner = startRunner(stack.base, runnerToken, {
    FAKE_SCENARIO: "team",
    FAKE_CODEX_WRITE_FILES: JSON.stringify({ "notes/a.md": "# A\n", "notes/b.md": "# B\n" }),
  });
  // The serverless build's flags, less those that would turn off what these tests check (same-origin
  // rules) and --single-process, under which closing a browser context closes the whole browser.
  const dropped = new Set(["--disable-web-security", "--allow-running-insecure-content", "--single-process"]);
  const args = chromium.args.filter((a) => !dropped.has(a));
  browser = await pw.launch({ executablePath: await chromium.executablePath(), args, headless: true });
});

afterAll(async () => {
  await browser?.close();
  await runner?.stop();
  await stack?.close();
});

describe("the web console and the public pages in Chromium", () => {
  it("answers every page 200 with no console error in a fresh state", { timeout: 600_000 }, async () => {
    await sweep("fresh", [...PUBLIC, ...CONSOLE], tokens.admin);
  });

  it("draws the pages under a POSIX locale (Linux Chromium's navigator.language en-US@posix) without an error", async () => {
    const { context, page, errors } = await person(tokens.viewer);
    try {
      // What Chromium reports under LANG=C.UTF-8 / a POSIX locale: a tag Intl refuses with a RangeError.
      await context.addInitScript(() => {
        Object.defineProperty(Navigator.prototype, "language", { get: () => "en-US@posix" });
        Object.defineProperty(Navigator.prototype, "languages", { get: () => ["en-US@posix"] });
      });
      for (const path of ["/console", "/console/spend", "/console/employees", "/console/tasks"]) {
        const res = await page.goto(`${stack.base}${path}`);
        expect(res?.status(), path).toBe(200);
        // The page's scripts ran (deferred scripts run before the load event) and the fallback took
        // the tag without its variant.
        await page.waitForLoadState("load");
        expect(await page.evaluate("navigator.language"), path).toBe("en-US");
      }
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("logs in at the form into an HttpOnly, Secure, SameSite=Strict cookie, and logs out", async () => {
    const { context, page, errors } = await person(tokens.viewer);
    try {
      const [cookie] = await context.cookies();
      expect(cookie).toMatchObject({ name: "__Host-crewplane-console", httpOnly: true, secure: true, sameSite: "Strict", path: "/" });
      expect(await page.evaluate("document.cookie")).toBe("");
      await page.getByRole("button", { name: "Log out" }).click();
      await page.waitForSelector("text=You are logged out.");
      expect(await context.cookies()).toEqual([]);
      await page.goto(`${stack.base}/console/approvals`);
      expect(new URL(page.url()).pathname).toBe("/console/login");
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("keeps a tab that is reloaded again and again live: closed pages free their streams, nobody is locked out", async () => {
    const { context, page, errors } = await person(tokens.viewer);
    try {
      await page.goto(`${stack.base}/console`);
      await live(page);
      // More reloads than the streams one operator may hold open (8): each page's stream must be freed.
      for (let i = 0; i < 12; i++) {
        await page.reload();
        await live(page);
      }
      expect(errors.filter((e) => !e.includes("status of 429"))).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it(
    "decides a topology reroute on one page and shows it live on a second; a viewer gets no form, a forged post is refused",
    { timeout: 600_000 },
    async () => {
      for (const [id, reportsTo] of [
        ["lead", null],
        ["alice", "lead"],
        ["bob", "lead"],
      ] as const) {
        const put = await stack.api(`/v1/employees/${id}`, {
          method: "PUT",
          body: { name: id, runtime: "offline", model: { preferred: "offline" }, reports_to: reportsTo },
        });
        expect(put.status).toBe(200);
      }
      await stack.api("/v1/config/topology_evolution", { method: "PUT", body: { enabled: true } });
      for (const [who, status] of [
        ["alice", "failed"],
        ["alice", "failed"],
        ["alice", "needs_human"],
        ["alice", "failed"],
        ["alice", "done"],
        ["bob", "done"],
        ["bob", "done"],
        ["bob", "done"],
        ["bob", "done"],
        ["bob", "done"],
      ] as const) {
        const t = await stack.api("/v1/tasks", {
          body: { title: "reconcile", mode: "goal", assignee: who, tags: ["billing"], manual: true },
        });
        expect((await stack.api(`/v1/tasks/${t.body.task_id}/settle`, { body: { status } })).status).toBe(200);
      }
      const tick = await stack.api("/v1/admin/ticks/topology", { method: "POST" });
      const approvalId = tick.body.summary.proposal.approval_id as string;
      state.approvalId = approvalId;
      const card = `#approval-${approvalId}`;

      // The viewer: the pending card, no decide form.
      const viewer = await person(tokens.viewer);
      await viewer.page.goto(`${stack.base}/console/approvals`);
      await viewer.page.waitForSelector(`${card}[data-status="pending"]`);
      expect(await viewer.page.$(`${card} form.decide`)).toBeNull();
      expect(await viewer.page.textContent(card)).toContain("Deciding needs the manager role.");
      await viewer.page.screenshot({ path: join(SHOTS, "approvals-viewer.png"), fullPage: true });

      // A forged post: a page on another origin submits the decide form with the manager's cookie and no token.
      const forger: Server = createServer((_req, res) => {
        res
          .writeHead(200, { "content-type": "text/html" })
          .end(
            `<!doctype html><html lang="en"><title>forged</title><form method="post" action="${stack.base}/console/approvals/${approvalId}/decide">` +
              `<input name="decision" value="approve"><button type="submit">Win a prize</button></form></html>`,
          );
      });
      await new Promise<void>((r) => forger.listen(0, "127.0.0.1", r));
      const manager = await person(tokens.manager);
      try {
        const forgedPage = await manager.context.newPage();
        await forgedPage.goto(`http://127.0.0.1:${(forger.address() as AddressInfo).port}/`);
        const [answer] = await Promise.all([forgedPage.waitForResponse((r) => r.url().includes("/decide")), forgedPage.click("button")]);
        expect(answer.status()).toBe(403);
        expect(await forgedPage.textContent("[data-code]")).toContain("csrf_failed");
        // And from a console page itself, a post without the token (a script that skipped the form).
        await manager.page.goto(`${stack.base}/console/approvals`);
        const status = await manager.page.evaluate(
          `fetch("/console/approvals/${approvalId}/decide", { method: "POST", body: new URLSearchParams({ decision: "approve" }) }).then((r) => r.status)`,
        );
        expect(status).toBe(403);
        // The browser logs that refusal as a console error: it is the one this step expects.
        manager.errors.splice(0, manager.errors.length, ...manager.errors.filter((e) => !e.includes("status of 403")));
        expect((await stack.api(`/v1/approvals/${approvalId}`)).body.status).toBe("pending");
        await forgedPage.close();
      } finally {
        await new Promise((r) => forger.close(r));
      }

      // Two pages of the manager: B watches, A decides with a note.
      const pageB = await manager.context.newPage();
      const errorsB = watch(pageB);
      await pageB.goto(`${stack.base}/console/approvals`);
      await live(pageB);
      await pageB.waitForSelector(`${card}[data-status="pending"]`);
      const pageA = manager.page;
      await live(pageA);
      // A mark only this page load carries: still there after the update means no reload brought it.
      await pageB.evaluate("window.__sameLoad = true");
      // By keyboard alone: the note's label leads to its field, Tab from it to Approve, Enter decides.
      await pageA.getByLabel("Note (optional)").focus();
      await pageA.keyboard.type("alice fails billing; bob does not");
      await pageA.keyboard.press("Tab");
      expect(await pageA.evaluate("document.activeElement.value")).toBe("approve");
      await pageA.keyboard.press("Enter");
      await pageA.waitForSelector(`${card}[data-status="approved"]`, { timeout: WAIT });
      await pageB.waitForSelector(`#approvals-decided ${card}[data-status="approved"]`, { timeout: WAIT });
      expect(await pageB.textContent(`#approvals-decided ${card}`)).toContain("alice fails billing; bob does not");
      expect(await pageB.textContent(`#approvals-decided ${card} [data-outcome]`)).toContain("Approved");
      expect(await pageB.evaluate("window.__sameLoad")).toBe(true);
      await pageB.screenshot({ path: join(SHOTS, "approvals-live-second-page.png"), fullPage: true });
      expect((await stack.api(`/v1/approvals/${approvalId}`)).body).toMatchObject({
        status: "approved",
        note: "alice fails billing; bob does not",
      });

      // The reroute runs: the topology page shows the override and its observation window, live.
      await pageB.goto(`${stack.base}/console/topology`);
      await live(pageB);
      const applied = await stack.api("/v1/admin/ticks/topology", { method: "POST" });
      expect(applied.body.summary.resolved).toEqual([expect.objectContaining({ outcome: "approved" })]);
      await pageB.waitForSelector("text=observed until", { timeout: WAIT });
      // The reject rates per edge, drawn as a chart (uPlot's canvas) beside the table with the same numbers.
      await pageB.waitForSelector('#reject-rates[data-drawn="true"] canvas', { timeout: WAIT });
      expect(await pageB.textContent(".chart-table")).toContain("billing: alice → bob");
      const rerouted = await stack.api("/v1/tasks", {
        body: { title: "reconcile again", mode: "goal", assignee: "alice", tags: ["billing"], manual: true },
      });
      expect(rerouted.body).toMatchObject({ assigned_to: "bob", routed_by: "override" });
      expect(errorsB).toEqual([]);
      expect(manager.errors).toEqual([]);
      expect(viewer.errors).toEqual([]);
      await viewer.context.close();
      await manager.context.close();
    },
  );

  it("shows a council session advancing on /council while votes arrive over the API", { timeout: 600_000 }, async () => {
    const { api } = stack;
    const nodes: { node_id: string; token: string }[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await api("/v1/nodes", { body: { name: `browser-${i}`, model_tier: 3 } });
      nodes.push({ node_id: res.body.node_id, token: res.body.node_secret });
      await api(`/v1/admin/nodes/${res.body.node_id}`, { method: "PATCH", body: { reputation: 50 } });
      await api(`/v1/nodes/${res.body.node_id}/heartbeat`, { token: res.body.node_secret, body: {} });
    }
    const proposer = await api("/v1/nodes", { body: { name: "browser-proposer", model_tier: 4 } });
    await api(`/v1/admin/nodes/${proposer.body.node_id}`, { method: "PATCH", body: { reputation: 65 } });
    await api(`/v1/nodes/${proposer.body.node_id}/heartbeat`, { token: proposer.body.node_secret, body: {} });
    const submitted = await api("/v1/council/proposals", {
      token: proposer.body.node_secret,
      body: {
        title: "Publish a weekly digest of council records",
        body: "Every week the council publishes a digest of all sessions, ballots and principles, so that nodes outside the council can follow its work and object in time. The digest is generated from the public trail.",
        kind: "general",
      },
    });
    expect(submitted.status).toBe(201);
    const sid = submitted.body.session_id as string;
    state.sessionId = sid;
    const step = async () => {
      await api("/v1/admin/clock", { body: { advance_ms: 11_000 } });
      await api("/v1/admin/ticks/council", { method: "POST" });
    };

    const watcher = await person();
    try {
      const { page } = watcher;
      await page.goto(`${stack.base}/council`);
      await live(page);
      const session = `#session-${sid}`;
      await page.waitForSelector(`${session} [data-phase="diverge"]`);
      await page.evaluate("window.__sameLoad = true");
      const view = (await api(`/v1/council/sessions/${sid}`)).body;
      const members = nodes.filter((n) => view.members.some((m: { node_id: string }) => m.node_id === n.node_id));
      for (const n of members)
        await api(`/v1/council/sessions/${sid}/dialog`, {
          token: n.token,
          body: { dialog_type: "assess", content: `Sound plan (${n.node_id}).` },
        });
      await page.waitForSelector(`${session} >> text=Sound plan (${members.at(-1)!.node_id}).`, { timeout: WAIT });
      await step();
      for (const n of members)
        await api(`/v1/council/sessions/${sid}/dialog`, { token: n.token, body: { dialog_type: "develop", content: "Agreed." } });
      await step();
      await page.waitForSelector(`${session} [data-phase="voting"]`, { timeout: WAIT });
      const hash = (await api(`/v1/council/sessions/${sid}`)).body.proposal_hash;
      for (const [i, n] of members.entries()) {
        const v = await api(`/v1/council/sessions/${sid}/dialog`, {
          token: n.token,
          body: { dialog_type: "vote", vote: "approve", confidence: 0.9, proposal_hash: hash, reasoning: `vote ${i + 1}` },
        });
        expect(v.status).toBe(201);
        // Each ballot shows up on the open page as it arrives.
        await page.waitForSelector(`${session} [data-votes="${i + 1}"]`, { timeout: WAIT });
      }
      await page.screenshot({ path: join(SHOTS, "council-voting-live.png"), fullPage: true });
      await step();
      await page.waitForSelector(`${session} [data-phase="approved"]`, { timeout: WAIT });
      await page.waitForSelector(`${session} [data-synthesis-source="template"]`, { timeout: WAIT });
      await page.screenshot({ path: join(SHOTS, "council-decided-live.png"), fullPage: true });
      expect(await page.evaluate("window.__sameLoad")).toBe(true);
      expect(watcher.errors).toEqual([]);
    } finally {
      await watcher.context.close();
    }
  });

  it(
    "runs a team goal and shows its role turns and cost by role; chats with an employee, the reply arriving live",
    { timeout: 600_000 },
    async () => {
      const put = await stack.api("/v1/employees/aiko", {
        method: "PUT",
        body: { name: "Aiko", runtime: "claude", model: { preferred: "claude-sonnet-4-6" } },
      });
      expect(put.status).toBe(200);
      const goal = await stack.api("/v1/employees/aiko/goals", { body: GOAL });
      expect(goal.status, JSON.stringify(goal.body)).toBe(201);
      const taskId = goal.body.task_id as string;
      state.taskId = taskId;
      await until(
        "the goal to settle",
        async () => {
          const t = (await stack.api(`/v1/tasks/${taskId}`)).body;
          return t.status !== "assigned" ? t : undefined;
        },
        300_000,
      );

      const manager = await person(tokens.manager);
      try {
        const { page } = manager;
        await page.goto(`${stack.base}/console/tasks/${taskId}/roles`);
        await page.waitForSelector("text=Ledger chain:");
        expect(await page.textContent("#roles")).toContain("verifies");
        expect(await page.$$("ol.turns > li")).not.toHaveLength(0);
        expect(await page.textContent("#roles")).toContain("Cost by role");
        await page.screenshot({ path: join(SHOTS, "task-roles.png"), fullPage: true });

        // A chat with an offline employee: the reply comes back as conversation.replied, live.
        await page.goto(`${stack.base}/console/employees/lead`);
        await page.getByLabel("Talk as user").fill("hana");
        await page.getByRole("button", { name: "Start a conversation" }).click();
        await page.waitForURL(/\/console\/conversations\/conv_[0-9a-f]{16}$/);
        state.conversationId = page.url().split("/").at(-1)!;
        await live(page);
        await page.getByRole("textbox", { name: "Message" }).fill("Please book the room for Tuesday afternoon");
        await page.getByRole("button", { name: "Send" }).click();
        await live(page);
        await page.waitForSelector('li[data-role="assistant"]', { timeout: WAIT });
        expect(await page.textContent('li[data-role="assistant"]')).toContain("[offline runtime]");
        await page.screenshot({ path: join(SHOTS, "conversation-live.png"), fullPage: true });

        // An operator's SOUL edit shows on the learning tab as a new version with its diff.
        const soul = (await stack.api("/v1/employees/aiko/soul")).body;
        const edited = await stack.api("/v1/employees/aiko/soul", {
          method: "PUT",
          body: {
            content: `${soul.content}\nAlways name the ticket you are working on.\n`,
            expected_version: soul.version,
            reason: "name tickets",
          },
        });
        expect(edited.status, JSON.stringify(edited.body)).toBe(200);
        await page.goto(`${stack.base}/console/employees/aiko/learning`);
        const version = `#soul-v${edited.body.version}`;
        expect(await page.textContent(`${version} h3`)).toContain("(current)");
        expect(await page.locator(`${version} .d-add`, { hasText: "+Always name the ticket you are working on." }).count()).toBe(1);
        await page.screenshot({ path: join(SHOTS, "learning-soul-diff.png"), fullPage: true });
        expect(manager.errors).toEqual([]);
      } finally {
        await manager.context.close();
      }
    },
  );

  it("reads and posts forms without JavaScript, the server's validation errors shown inline", async () => {
    const context = await browser.newContext({ javaScriptEnabled: false, locale: "en-US" });
    try {
      const page = await context.newPage();
      await page.goto(`${stack.base}/principles`);
      await page.getByLabel("Text to check").fill("Publish a weekly digest of council records");
      await page.getByRole("button", { name: "Check against the principles" }).click();
      await page.waitForSelector("[data-max-overlap]");

      await page.goto(`${stack.base}/console/config/runner`);
      await page.getByLabel("Operator token").fill(tokens.admin);
      await page.getByRole("button", { name: "Log in" }).click();
      await page.waitForURL(/\/console\/config\/runner$/);
      // The form generated from the section's schema; the raw JSON is behind a <details>.
      const attempts = await page.inputValue("#cfg-max_attempts");
      expect(attempts).toMatch(/^\d+$/);
      await page.getByText("Raw JSON").click();
      const original = await page.inputValue("#config-json");
      await page.fill("#config-json", '{"max_attempts": "three"}');
      const [refused] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === "POST"),
        page.getByRole("button", { name: "Save as JSON" }).click(),
      ]);
      expect(refused.status()).toBe(422);
      expect(await page.getAttribute(".problem", "data-code")).toBe("validation_failed");
      expect(await page.textContent("#config-json-errors")).toContain("max_attempts");
      expect(await page.getAttribute("#config-json", "aria-invalid")).toBe("true");
      await page.fill("#config-json", original);
      await page.getByRole("button", { name: "Save as JSON" }).click();
      await page.waitForSelector("text=Saved.");
      // The fields form saves too (the same value, so the rest of this file's stack is unchanged).
      await page.goto(`${stack.base}/console/config/runner`);
      await page.getByRole("button", { name: "Save", exact: true }).click();
      await page.waitForSelector("text=Saved.");
      expect(await page.inputValue("#cfg-max_attempts")).toBe(attempts);
      await page.screenshot({ path: join(SHOTS, "config-no-javascript.png"), fullPage: true });

      // The employee edit form: a blank name is refused beside its field with the draft kept; then its own [team] gate is saved.
      await page.goto(`${stack.base}/console/employees/alice/edit`);
      const name = await page.inputValue("#emp-name");
      await page.fill("#emp-name", " ");
      await page.fill("#emp-team-gate", "always_solo");
      const [blank] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === "POST"),
        page.getByRole("button", { name: /^Save revision/ }).click(),
      ]);
      expect(blank.status()).toBe(422);
      expect(await page.getAttribute("#emp-name", "aria-invalid")).toBe("true");
      expect(await page.textContent("#emp-name-errors")).not.toBe("");
      expect(await page.inputValue("#emp-team-gate")).toBe("always_solo");
      await page.fill("#emp-name", name);
      await page.getByRole("button", { name: /^Save revision/ }).click();
      await page.waitForURL(/\/console\/employees\/alice$/);
      expect((await stack.api("/v1/employees/alice")).body.team).toMatchObject({ gate: "always_solo" });
    } finally {
      await context.close();
    }
  });

  it("answers every page 200 with no console error after a council session, a team goal and a reroute", { timeout: 900_000 }, async () => {
    expect(state).toMatchObject({
      approvalId: expect.any(String),
      sessionId: expect.any(String),
      taskId: expect.any(String),
      conversationId: expect.any(String),
    });
    await sweep(
      "after",
      [
        ...PUBLIC,
        `/council/sessions/${state.sessionId}`,
        ...CONSOLE,
        "/console/employees/alice",
        "/console/employees/aiko",
        "/console/employees/aiko/edit",
        "/console/employees/aiko/skills",
        "/console/employees/lead/memory",
        "/console/employees/lead/wiki",
        "/console/employees/lead/learning",
        "/console/employees/aiko/learning",
        `/console/tasks/${state.taskId}`,
        `/console/tasks/${state.taskId}/roles`,
        `/console/conversations/${state.conversationId}`,
      ],
      tokens.admin,
    );
  });
});
