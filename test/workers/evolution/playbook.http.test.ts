import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { playbookTick } from "../../../src/evolution/aee-settle";
import { pruneInjections } from "../../../src/evolution/playbook-applications";
import { call, createOperator, createRunner } from "../../factories";
import { completeStage, failStage, type LeasedStage } from "../../factories/scripted-runner";
import { eventsOf } from "../../factories/team";
import { now, putEmployee, seedEntries, seedEntry } from "./aee-helpers";

/** The operator's side of the playbook over HTTP (issue 23 item 6): read, export, retire, migrate the SOUL, scaffold cases. */
const SOUL = [
  "# Kai",
  "",
  "You are Kai, who keeps the team's services healthy.",
  "",
  "## Rules",
  "- Never paste e-mail addresses from a log into a reply; redact each address first.",
  "- Always keep strict type checking on when you touch a TypeScript project's tsconfig.",
  "- Be warm.",
  "",
].join("\n");

async function putSoul(id: string, content: string) {
  const current = await call(`/v1/employees/${id}/soul`);
  expect(current.status, JSON.stringify(current.body)).toBe(200);
  const res = await call(`/v1/employees/${id}/soul`, { method: "PUT", body: { content, expected_version: current.body.version } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function playbookRows(id: string) {
  return (await env.DB.prepare(`SELECT entry_id, state, version FROM playbook_entries WHERE agent_id = ? ORDER BY entry_id`).bind(id).all())
    .results;
}

describe("GET /v1/employees/:id/playbook", () => {
  it("lists every entry with the capacity, filters by state, and exports GEP genes", async () => {
    await putEmployee("pb-read");
    await seedEntries("pb-read", [
      seedEntry("pb-read", { entry_id: "pbe_a" }),
      seedEntry("pb-read", {
        entry_id: "pbe_b",
        state: "stale",
        state_reason: "unused",
        content: "Quote the failing test's name before proposing a fix to it.",
      }),
    ]);
    const all = await call("/v1/employees/pb-read/playbook");
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ employee_id: "pb-read", revision: 1, capacity: expect.objectContaining({ live: 1 }) });
    expect(all.body.entries.map((e: any) => [e.entry_id, e.state])).toEqual([
      ["pbe_a", "active"],
      ["pbe_b", "stale"],
    ]);
    expect((await call("/v1/employees/pb-read/playbook?state=stale")).body.entries.map((e: any) => e.entry_id)).toEqual(["pbe_b"]);
    const gene = await call("/v1/employees/pb-read/playbook?format=gene");
    expect(gene.body).toMatchObject({ format: "gep-gene", agent_id: "pb-read" });
    expect(gene.body.genes.map((g: any) => [g.type, g.id, g.state])).toEqual([
      ["Gene", "pbe_a", "active"],
      ["Gene", "pbe_b", "stale"],
    ]);
    expect(gene.body.genes[0]).toMatchObject({
      validation: ["eval:config-edits/node-engine"],
      epigenetic_marks: ["state:active", "state_reason:settle_accept"],
    });
  });

  it("answers problem+json for an unknown employee and an unknown format", async () => {
    const missing = await call("/v1/employees/pb-nobody/playbook");
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-type")).toContain("application/problem+json");
    await putEmployee("pb-fmt");
    const bad = await call("/v1/employees/pb-fmt/playbook?format=xml");
    expect(bad.status).toBe(422);
    expect(bad.body.code).toBe("validation_failed");
  });
});

describe("POST /v1/employees/:id/playbook/:entry_id/retire", () => {
  it("archives the entry (never deletes it), records who did it, and refuses a viewer, a second retire and an unknown entry", async () => {
    await putEmployee("pb-retire");
    await seedEntries("pb-retire", [seedEntry("pb-retire", { entry_id: "pbe_r" })]);
    const viewer = await createOperator("viewer", "pb-viewer");
    const refused = await call("/v1/employees/pb-retire/playbook/pbe_r/retire", { token: viewer, body: { reason: "no longer true" } });
    expect(refused.status).toBe(403);
    const blank = await call("/v1/employees/pb-retire/playbook/pbe_r/retire", { body: { reason: " " } });
    expect(blank.status).toBe(422);
    expect(await playbookRows("pb-retire")).toEqual([{ entry_id: "pbe_r", state: "active", version: 1 }]);

    const ok = await call("/v1/employees/pb-retire/playbook/pbe_r/retire", { body: { reason: "no longer true" } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.entry).toMatchObject({ entry_id: "pbe_r", state: "retired", state_reason: "no longer true", version: 1 });
    expect(await playbookRows("pb-retire")).toEqual([{ entry_id: "pbe_r", state: "retired", version: 1 }]);
    expect((await eventsOf("playbook.entry_retired", "pb-retire"))[0]!.payload).toMatchObject({
      entry_id: "pbe_r",
      reason: "no longer true",
    });

    const again = await call("/v1/employees/pb-retire/playbook/pbe_r/retire", { body: { reason: "twice" } });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: "conflict", reason: "entry_retired" });
    expect((await call("/v1/employees/pb-retire/playbook/pbe_nope/retire", { body: { reason: "x" } })).status).toBe(404);
    expect(await eventsOf("playbook.entry_retired", "pb-retire")).toHaveLength(1);
  });

  it("lands both of two retires racing on different entries, and only one of two on the same entry", async () => {
    await putEmployee("pb-race");
    await seedEntries("pb-race", [
      seedEntry("pb-race", { entry_id: "pbe_1" }),
      seedEntry("pb-race", { entry_id: "pbe_2", content: "Quote the failing test's name before proposing a fix to it." }),
      seedEntry("pb-race", { entry_id: "pbe_3", content: "Give times in UTC with the offset written out, never a bare local time." }),
    ]);
    const retire = (id: string) => call(`/v1/employees/pb-race/playbook/${id}/retire`, { body: { reason: `retire ${id}` } });
    const [a, b] = await Promise.all([retire("pbe_1"), retire("pbe_2")]);
    expect([a.status, b.status]).toEqual([200, 200]);
    const [c, d] = await Promise.all([retire("pbe_3"), retire("pbe_3")]);
    expect([c.status, d.status].sort()).toEqual([200, 409]);
    expect(await playbookRows("pb-race")).toEqual([
      { entry_id: "pbe_1", state: "retired", version: 1 },
      { entry_id: "pbe_2", state: "retired", version: 1 },
      { entry_id: "pbe_3", state: "retired", version: 1 },
    ]);
    expect(await eventsOf("playbook.entry_retired", "pb-race")).toHaveLength(3);
    const head = await env.DB.prepare(`SELECT revision FROM playbooks WHERE agent_id = 'pb-race'`).first<{ revision: number }>();
    expect(head!.revision).toBe(4);
  });
});

describe("migrate-soul and eval-scaffold", () => {
  it("drafts entries from the SOUL's rules without writing anything, then applies the reviewed delta as probation entries with settle windows", async () => {
    await putEmployee("pb-mig");
    await putSoul("pb-mig", SOUL);
    const drafted = await call("/v1/employees/pb-mig/playbook/migrate-soul", { method: "POST" });
    expect(drafted.status, JSON.stringify(drafted.body)).toBe(200);
    expect(drafted.body.drafts.map((d: any) => d.rule)).toEqual([
      "Never paste e-mail addresses from a log into a reply; redact each address first.",
      "Always keep strict type checking on when you touch a TypeScript project's tsconfig.",
      "Be warm.",
    ]);
    const [emails, strict, warm] = drafted.body.drafts;
    expect(emails.op.eval_cases).toEqual(["log-triage/redact-emails"]);
    expect(strict.op.eval_cases).toEqual(["config-edits/tsconfig-strict"]);
    // No case shares a word with "Be warm.": the draft says so and stays out of the ready delta.
    expect(warm).toMatchObject({ suggested_case: null, problems: ["eval_cases_empty"] });
    expect(drafted.body.delta.ops).toHaveLength(2);
    expect(await playbookRows("pb-mig")).toEqual([]);

    const manager = await createOperator("manager", "pb-mig-manager");
    const applied = await call("/v1/employees/pb-mig/playbook/migrate-soul/apply", { token: manager, body: { delta: drafted.body.delta } });
    expect(applied.status, JSON.stringify(applied.body)).toBe(201);
    expect(applied.body.entries).toEqual([
      expect.objectContaining({
        state: "probation",
        eval_cases: ["log-triage/redact-emails"],
        derived_from: [{ kind: "soul_migration", id: expect.stringMatching(/^soul_v\d+$/) }],
      }),
      expect.objectContaining({ state: "probation", eval_cases: ["config-edits/tsconfig-strict"] }),
    ]);
    const settle = await env.DB.prepare(`SELECT status FROM playbook_settle_items WHERE agent_id = 'pb-mig'`).all();
    expect(settle.results).toEqual([{ status: "pending" }, { status: "pending" }]);
    expect((await eventsOf("playbook.migrated", "pb-mig"))[0]!.payload).toMatchObject({
      entries: applied.body.entries.map((e: any) => e.entry_id),
    });

    // Applying the same drafts again repeats live entries: refused whole, audited, nothing written.
    const repeat = await call("/v1/employees/pb-mig/playbook/migrate-soul/apply", { body: { delta: drafted.body.delta } });
    expect(repeat.status).toBe(422);
    expect(repeat.body).toMatchObject({
      code: "validation_failed",
      reason: "near_duplicate",
      duplicate_of: applied.body.entries[0].entry_id,
      similarity: 1,
    });
    expect((await eventsOf("playbook.dedup_refused", "pb-mig"))[0]!.payload).toMatchObject({
      source: "soul_migration",
      duplicate_of: applied.body.entries[0].entry_id,
    });
    expect(await playbookRows("pb-mig")).toHaveLength(2);
  });

  it("refuses through apply anything but additions drafted from the SOUL, and additions without an eval case", async () => {
    await putEmployee("pb-mig2");
    await seedEntries("pb-mig2", [seedEntry("pb-mig2", { entry_id: "pbe_keep" })]);
    const retire = await call("/v1/employees/pb-mig2/playbook/migrate-soul/apply", {
      body: { delta: { ops: [{ op: "retire", entry_id: "pbe_keep", reason: "sneaky" }] } },
    });
    expect(retire.status).toBe(422);
    expect(retire.body).toMatchObject({ code: "validation_failed", reason: "not_a_migration" });
    const operatorAdd = {
      op: "add",
      category: "optimize",
      content: "Redact every e-mail address before quoting a log line.",
      eval_cases: ["log-triage/redact-emails"],
      derived_from: [{ kind: "operator", id: "op_1" }],
    };
    expect((await call("/v1/employees/pb-mig2/playbook/migrate-soul/apply", { body: { delta: { ops: [operatorAdd] } } })).body.reason).toBe(
      "not_a_migration",
    );
    const unlinked = await call("/v1/employees/pb-mig2/playbook/migrate-soul/apply", {
      body: { delta: { ops: [{ ...operatorAdd, eval_cases: [], derived_from: [{ kind: "soul_migration", id: "soul_v1" }] }] } },
    });
    expect(unlinked.status).toBe(422);
    expect(unlinked.body.reason).toBe("eval_cases_empty");
    const unknownCase = await call("/v1/employees/pb-mig2/playbook/migrate-soul/apply", {
      body: {
        delta: {
          ops: [{ ...operatorAdd, eval_cases: ["log-triage/no-such-case"], derived_from: [{ kind: "soul_migration", id: "soul_v1" }] }],
        },
      },
    });
    expect(unknownCase.body.reason).toBe("eval_case_unknown");
    expect(await playbookRows("pb-mig2")).toEqual([{ entry_id: "pbe_keep", state: "active", version: 1 }]);
  });

  it("drafts one eval case per SOUL rule as TOML that loads as a case, and writes nothing", async () => {
    await putEmployee("pb-scaffold");
    await putSoul("pb-scaffold", SOUL);
    const res = await call("/v1/employees/pb-scaffold/eval-scaffold", { method: "POST" });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.drafts).toHaveLength(3);
    for (const d of res.body.drafts) {
      expect(d.path).toMatch(/^evals-drafts\/soul-pb-scaffold\/[a-z0-9-]+\.toml$/);
      expect(d).toMatchObject({ loads: true, load_errors: [] });
      expect(d.toml).toContain(`The reply follows the rule: ${d.rule}`);
    }
    expect(new Set(res.body.drafts.map((d: any) => d.path)).size).toBe(3);
    const viewer = await createOperator("viewer", "pb-scaffold-viewer");
    expect((await call("/v1/employees/pb-scaffold/eval-scaffold", { method: "POST", token: viewer })).status).toBe(403);
  });
});

describe("applications: what a chat turn's entries did", () => {
  async function reply(runnerToken: string, conversationId: string, text: string): Promise<LeasedStage & { payload: any }> {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const res = await call("/v1/runner/lease", { token: runnerToken, body: { capacity: 5, wait_ms: 500, runtimes: ["claude"] } });
      for (const job of res.body.jobs as any[]) {
        if (job.payload.conversation_id === conversationId) {
          await completeStage(runnerToken, job, { text, runtime: "claude" });
          return job;
        }
        await failStage(runnerToken, job, "cli_error", "a job of another test");
      }
    }
    throw new Error(`no reply job for ${conversationId}`);
  }

  async function waitReplied(conversationId: string, turns: number) {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const view = (await call(`/v1/conversations/${conversationId}`)).body;
      if (view.turns.length === turns && !view.reply_pending) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`conversation ${conversationId} did not reach ${turns} turns`);
  }

  const entryOf = async (agent: string, id: string) =>
    (await call(`/v1/employees/${agent}/playbook`)).body.entries.find((e: any) => e.entry_id === id);

  it("records one application per entry and closed conversation, success on a calm one and failure on a critical one, never twice", async () => {
    await putEmployee("pb-apps");
    // Entries active since now: one idle for 30 days would be swept stale by the tick, and no longer injected.
    const at = (await now()).toISOString();
    const fresh = { created_at: at, updated_at: at, state_since: at };
    await seedEntries("pb-apps", [
      seedEntry("pb-apps", { entry_id: "pbe_rel", signals_match: ["release|changelog"], success_streak: 2, ...fresh }),
      seedEntry("pb-apps", {
        entry_id: "pbe_other",
        signals_match: ["invoice"],
        content: "Quote the invoice number in the first line of every billing answer.",
        ...fresh,
      }),
    ]);
    const runner = await createRunner("pb-apps");
    const opened = await call("/v1/employees/pb-apps/conversations", { body: { user_id: "mei" } });
    const id = opened.body.conversation_id as string;
    const sent = await call(`/v1/conversations/${id}/messages`, {
      body: { content: "Please write the release notes for version 4 of the exporter" },
    });
    expect(sent.status).toBe(202);
    const job = await reply(runner.token, id, "Here are the release notes for version 4.");
    expect(job.payload.prompt).toContain("When asked for release notes");
    await waitReplied(id, 2);
    // Nothing is recorded while the conversation is open.
    await playbookTick(env, await now());
    expect((await entryOf("pb-apps", "pbe_rel")).applications).toEqual([]);

    const closed = await call(`/v1/conversations/${id}/close`, { method: "POST" });
    expect(closed.body.error.category).toMatch(/^(negligible|moderate)$/);
    // Two ticks racing over the closed conversation record its applications once.
    const at2 = await now();
    const ticks = await Promise.all([playbookTick(env, at2), playbookTick(env, at2)]);
    expect(ticks.map((t) => t.applications_recorded as number).reduce((a, b) => a + b)).toBe(2);
    const rel = await entryOf("pb-apps", "pbe_rel");
    expect(rel).toMatchObject({
      success_streak: 3,
      applications: [{ outcome: "success", conversation_id: id, score: closed.body.error.inferred_satisfaction }],
    });
    expect((await entryOf("pb-apps", "pbe_other")).applications).toHaveLength(1);
    expect((await eventsOf("playbook.applications_recorded", "pb-apps"))[0]!.payload.applications).toHaveLength(2);
    // A second tick finds nothing left to record.
    expect(await playbookTick(env, await now())).toMatchObject({ applications_recorded: 0 });
    expect((await entryOf("pb-apps", "pbe_rel")).applications).toHaveLength(1);

    // A conversation the user keeps correcting: a failure for every entry it carried, which ends the streak.
    const rough = await call(`/v1/employees/pb-apps/conversations`, { body: { user_id: "mei" } });
    const rid = rough.body.conversation_id as string;
    for (const [i, text] of [
      "Write the changelog for version 5",
      "That's wrong, incorrect version. Please fix",
      "no, still wrong?",
      "try again?",
    ].entries()) {
      expect((await call(`/v1/conversations/${rid}/messages`, { body: { content: text } })).status).toBe(202);
      expect((await reply(runner.token, rid, "Sorry.")).payload.prompt).toContain("## Your playbook");
      await waitReplied(rid, (i + 1) * 2);
    }
    const bad = await call(`/v1/conversations/${rid}/close`, { method: "POST" });
    expect(bad.body.error.category).toMatch(/^(significant|critical)$/);
    await playbookTick(env, await now());
    const after = await entryOf("pb-apps", "pbe_rel");
    expect(after.success_streak).toBe(0);
    expect(after.applications.map((a: any) => [a.outcome, a.conversation_id])).toEqual([
      ["success", id],
      ["failed", rid],
    ]);
    const rows = await env.DB.prepare(`SELECT COUNT(*) AS n, COUNT(recorded_at) AS done FROM playbook_injections WHERE conversation_id = ?`)
      .bind(rid)
      .first();
    expect((rows as any).done).toBe((rows as any).n);
    expect((rows as any).n).toBeGreaterThanOrEqual(4);
  });
});

describe("pruning what chat turns carried", () => {
  it("drops recorded rows past a week and old rows of conversations that are gone, and keeps the rest", async () => {
    await putEmployee("pb-prune");
    const opened = await call("/v1/employees/pb-prune/conversations", { body: { user_id: "ana" } });
    const live = opened.body.conversation_id as string;
    const at = await now();
    const daysAgo = (d: number) => new Date(at.getTime() - d * 24 * 3600_000).toISOString();
    const rows: [string, number, string, string, string | null][] = [
      ["cnv_gone_recorded", 1, "pbe_a", daysAgo(8), daysAgo(8)], // recorded, past the week: pruned
      ["cnv_gone_recent", 1, "pbe_a", daysAgo(1), daysAgo(1)], // recorded yesterday: kept
      ["cnv_gone_orphan", 1, "pbe_a", daysAgo(8), null], // never recorded, conversation gone: pruned
      [live, 1, "pbe_a", daysAgo(8), null], // never recorded, conversation still there: kept
      ["cnv_gone_orphan_new", 1, "pbe_a", daysAgo(2), null], // gone, but not a week old yet: kept
    ];
    await env.DB.batch(
      rows.map(([c, t, e, a, r]) =>
        env.DB.prepare(
          "INSERT INTO playbook_injections (conversation_id, turn, entry_id, agent_id, at, recorded_at) VALUES (?, ?, ?, 'pb-prune', ?, ?)",
        ).bind(c, t, e, a, r),
      ),
    );
    const left = async () =>
      (
        await env.DB.prepare("SELECT conversation_id FROM playbook_injections WHERE agent_id = 'pb-prune' ORDER BY conversation_id").all<{
          conversation_id: string;
        }>()
      ).results.map((r) => r.conversation_id);

    // A tick's share is bounded: one row at a time here.
    expect(await pruneInjections(getDb(env.DB), at, 1)).toBe(1);
    expect(await pruneInjections(getDb(env.DB), at)).toBe(1);
    expect(await left()).toEqual(["cnv_gone_orphan_new", "cnv_gone_recent", live].sort());
    // The playbook tick runs it and says how many it dropped (other tests' recorded rows as well).
    const tick = await playbookTick(env, new Date(at.getTime() + 7 * 24 * 3600_000));
    expect(tick.injections_pruned).toBeGreaterThanOrEqual(2);
    expect(await left()).toEqual([live]);
  });
});
