import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { writeDirectDialog } from "../../../src/council/direct-dialog";
import { loadSession, sessionUpdate } from "../../../src/council/session-store";
import { getDb } from "../../../src/db/client";
import type { CouncilSession } from "../../../src/durable-objects/council-session";
import { isGuardFailure } from "../../../src/db/guard";
import { revokeCredential } from "../../../src/lib/credentials";
import { call, createRunner } from "../../factories";
import { advance, dialog, progress, session, sessionOpener } from "../../factories/council-http";

// The direct path of POST /v1/council/sessions/:id/dialog (council/direct-dialog.ts): plain
// contributions written by the Worker in one guarded D1 batch that also authenticates the token,
// the session object folding them in at its checks.

const opener = sessionOpener("dd");

/** A fresh session in diverge (9 seated members), or in challenge when `phase` says so. */
async function open(phase: "diverge" | "challenge" = "diverge") {
  const { sid, seated, council: c, proposer } = await opener();
  const outsider = c.members.find((m) => !seated.includes(m))!;
  if (phase === "challenge") {
    for (const m of seated) expect((await dialog(m, sid, { dialog_type: "assess", content: "Sound." })).status).toBe(201);
    await progress();
  }
  const s = await session(sid);
  expect(s.phase).toBe(phase);
  return { sid, seated, outsider, proposer };
}

const db = () => getDb(env.DB);
const rows = (sid: string) =>
  env.DB.prepare(
    `SELECT id, seq, node_id, phase, dialog_type, created_at, check_due_at FROM council_dialogs WHERE session_id = ? ORDER BY seq`,
  )
    .bind(sid)
    .all<{
      id: string;
      seq: number;
      node_id: string;
      phase: string;
      dialog_type: string;
      created_at: string;
      check_due_at: string | null;
    }>()
    .then((r) => r.results);
const lastDialogAt = (nodeId: string) =>
  env.DB.prepare(`SELECT last_dialog_at AS at FROM nodes WHERE id = ?`)
    .bind(nodeId)
    .first<{ at: string | null }>()
    .then((r) => r?.at ?? null);
const check = (sid: string) => call(`/v1/council/sessions/${sid}/check`, { method: "POST" });

describe("a plain dialog written directly", () => {
  it("lands in the trail with its seat and phase, marks the node's last dialog and shows as a response at once", async () => {
    const { sid, seated, proposer } = await open();
    const before = await lastDialogAt(seated[1]!.node_id);
    const res = await dialog(seated[1]!, sid, { dialog_type: "assess", content: "Feasible." });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ node_id: seated[1]!.node_id, phase: "diverge", dialog_type: "assess", content: "Feasible." });
    expect((await dialog(proposer, sid, { dialog_type: "develop", content: "Answering." })).body.role).toBe("proposer");
    const s = await session(sid);
    expect(s.dialogs.map((d: { id: string }) => d.id)).toContain(res.body.id);
    expect(await lastDialogAt(seated[1]!.node_id)).not.toBe(before);
    // the next check folds it into the state: diverge completes once every member has responded
    for (const m of seated.filter((_, i) => i !== 1)) await dialog(m, sid, { dialog_type: "develop", content: "Agreed." });
    await progress();
    expect((await session(sid)).phase).toBe("challenge");
  });

  it("counts a term member's first response once, however many plain dialogs follow it", async () => {
    const { sid, seated } = await open();
    const member = seated[2]!;
    const counts = () =>
      env.DB.prepare(
        `SELECT tm.requests, tm.responses FROM council_term_members tm JOIN council_sessions s ON s.term_id = tm.term_id
         WHERE s.id = ? AND tm.node_id = ?`,
      )
        .bind(sid, member.node_id)
        .first<{ requests: number; responses: number }>();
    // headroom, as after earlier sessions of the term: the counter never passes the requests
    await env.DB.prepare(
      `UPDATE council_term_members SET requests = requests + 5 WHERE node_id = ? AND term_id = (SELECT term_id FROM council_sessions WHERE id = ?)`,
    )
      .bind(member.node_id, sid)
      .run();
    const before = (await counts())!;
    for (const type of ["assess", "develop", "agree"] as const) {
      expect((await dialog(member, sid, { dialog_type: type, content: "Still here." })).status).toBe(201);
      expect(await counts()).toEqual({ requests: before.requests, responses: before.responses + 1 });
    }
    // the session object's own dialogs do not fire the direct path's trigger
    const direct = await env.DB.prepare(`SELECT COUNT(*) AS n FROM council_dialogs WHERE session_id = ? AND check_due_at IS NOT NULL`)
      .bind(sid)
      .first<{ n: number }>();
    expect(direct?.n).toBe(3);
  });

  it("brings the session object's alarm forward to the progress check, which then moves the session on without a tick", async () => {
    const { sid, seated } = await open();
    const stub = env.COUNCIL_SESSION.getByName(sid);
    const alarm = () => runInDurableObject(stub, (_o: CouncilSession, state) => state.storage.getAlarm());
    // before: the alarm waits for the next deadline, minutes away
    expect((await alarm())! - Date.now()).toBeGreaterThan(60_000);
    for (const m of seated) expect((await dialog(m, sid, { dialog_type: "assess", content: "Fine." })).status).toBe(201);
    // only the first dialog moved the session's next check (to its debounced check); the others
    // found it due sooner and left it, so they record '' and do not nudge
    const { next } = (await env.DB.prepare(`SELECT next_check_at AS next FROM council_sessions WHERE id = ?`)
      .bind(sid)
      .first<{ next: string }>())!;
    const dues = (await rows(sid)).filter((r) => r.dialog_type === "assess").map((r) => r.check_due_at);
    expect(dues).toEqual([next, ...seated.slice(1).map(() => "")]);
    expect(Date.parse(next) - Date.parse((await rows(sid)).find((r) => r.dialog_type === "assess")!.created_at)).toBe(10_000);
    // the nudge runs after the answer (waitUntil): wait for it, not for a time
    for (let i = 0; i < 100 && (await alarm())! - Date.now() > 10_000; i++) await scheduler.wait(50);
    expect((await alarm())! - Date.now()).toBeLessThanOrEqual(10_000);
    await advance(11_000);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await session(sid)).phase).toBe("challenge");
  });

  it("is refused exactly as the session object refuses it, writing nothing: wrong phase, no seat, reply to nothing, too many", async () => {
    const { sid, seated, outsider } = await open();
    const n = (await rows(sid)).length;
    const outsiderBefore = await lastDialogAt(outsider.node_id);
    const amend = await dialog(seated[0]!, sid, {
      dialog_type: "amend",
      amendment_type: "add",
      amendment_target: "scope",
      amendment_content: "x",
    });
    expect([amend.status, amend.body.code]).toEqual([409, "wrong_phase"]);
    const stranger = await dialog(outsider, sid, { dialog_type: "develop", content: "Let me in." });
    expect([stranger.status, stranger.body.code]).toEqual([403, "not_eligible"]);
    const dangling = await dialog(seated[0]!, sid, { dialog_type: "agree", reply_to: "dlg_0000000000000000", content: "Yes." });
    expect([dangling.status, dangling.body.code]).toEqual([422, "validation_failed"]);
    expect(await rows(sid)).toHaveLength(n);
    expect(await lastDialogAt(outsider.node_id)).toBe(outsiderBefore);
    for (let i = 0; i < 30; i++)
      expect((await dialog(seated[2]!, sid, { dialog_type: "develop", content: `Point ${i}.` })).status).toBe(201);
    const thirtyFirst = await dialog(seated[2]!, sid, { dialog_type: "develop", content: "One more." });
    expect([thirtyFirst.status, thirtyFirst.body.code]).toEqual([429, "rate_limited"]);
    expect((await rows(sid)).filter((r) => r.node_id === seated[2]!.node_id)).toHaveLength(30);
  });

  it("sends a reply to an amendment through the session object, which counts its support", async () => {
    const { sid, seated } = await open("challenge");
    const amend = await dialog(seated[0]!, sid, {
      dialog_type: "amend",
      amendment_type: "add",
      amendment_target: "scope",
      amendment_content: "Redact ballots until voting closes.",
    });
    expect(amend.status).toBe(201);
    for (const m of seated.slice(1, 3)) expect((await dialog(m, sid, { dialog_type: "agree", reply_to: amend.body.id })).status).toBe(201);
    const s = await session(sid);
    expect(s.amendments[0].support).toEqual(seated.slice(1, 3).map((m) => m.node_id));
  });
});

describe("the direct write authenticates in its own statement", () => {
  it("answers 403 to a token that is not a node's (a runner's), writing nothing", async () => {
    const { sid } = await open();
    const n = (await rows(sid)).length;
    const runner = await createRunner("dd-runner");
    const res = await call(`/v1/council/sessions/${sid}/dialog`, { token: runner.token, body: { dialog_type: "develop", content: "x" } });
    expect([res.status, res.body.code]).toEqual([403, "forbidden"]);
    expect(await rows(sid)).toHaveLength(n);
  });
});

describe("a direct dialog racing a phase change", () => {
  it("a save that did not see a dialog written directly meanwhile is refused by its guard, and the next check folds the dialog in", async () => {
    const { sid, seated } = await open();
    const loaded = (await loadSession(db(), sid))!;
    const direct = await writeDirectDialog(db(), {
      session_id: sid,
      poster: { node_id: seated[4]!.node_id },
      body: { dialog_type: "assess", content: "Written between a load and a save." },
      now: new Date(),
      debounce_ms: 10_000,
    });
    expect(direct?.dialog.phase).toBe("diverge");
    const stale = { ...loaded.state, phase: "challenge" as const };
    const err = await db()
      .batch([sessionUpdate(db(), stale, loaded.version, loaded.state.dialog_count, new Date())])
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(isGuardFailure(err, "council_sessions.version")).toBe(true);
    expect((await loadSession(db(), sid))!.state.phase).toBe("diverge");
    for (const m of seated.filter((_, i) => i !== 4)) await dialog(m, sid, { dialog_type: "develop", content: "Agreed." });
    await progress();
    const s = await session(sid);
    expect(s.phase).toBe("challenge");
    expect((await loadSession(db(), sid))!.state.dialog_count).toBe((await rows(sid)).length);
  });

  it("a dialog arriving after the phase changed is refused whole: no row, no last-dialog time, no response counted", async () => {
    const { sid, seated } = await open("challenge");
    for (const m of seated) await dialog(m, sid, { dialog_type: "develop", content: "ok" });
    await progress();
    expect((await session(sid)).phase).toBe("voting");
    const n = (await rows(sid)).length;
    const before = await lastDialogAt(seated[5]!.node_id);
    const direct = await writeDirectDialog(db(), {
      session_id: sid,
      poster: { node_id: seated[5]!.node_id },
      body: { dialog_type: "develop", content: "Too late." },
      now: new Date(),
      debounce_ms: 10_000,
    });
    expect(direct).toBeNull();
    const late = await dialog(seated[5]!, sid, { dialog_type: "develop", content: "Too late." });
    expect([late.status, late.body.code]).toEqual([409, "wrong_phase"]);
    expect(await rows(sid)).toHaveLength(n);
    expect(await lastDialogAt(seated[5]!.node_id)).toBe(before);
  });

  it("posts racing the check that opens voting are each recorded in challenge or refused, and voting then runs to one tally", async () => {
    const { sid, seated } = await open("challenge");
    for (const m of seated) await dialog(m, sid, { dialog_type: "develop", content: "ok" });
    await advance(11_000);
    const before = (await rows(sid)).length;
    // three checks start, and three chains of posts run one after another while they do (and after)
    const checks = [check(sid), check(sid), check(sid)];
    const chain = async (k: number) => {
      const out = [];
      for (let i = 0; i < 9; i++)
        out.push(await dialog(seated[(i + 3 * k) % 9]!, sid, { dialog_type: "develop", content: `race ${k}.${i}` }));
      return out;
    };
    const answers = (await Promise.all([0, 1, 2].map(chain))).flat();
    await Promise.all(checks);
    await progress();
    const s = await session(sid);
    expect(s.phase).toBe("voting");
    const written = answers.filter((a) => a.status === 201);
    const refused = answers.filter((a) => a.status !== 201);
    expect(written.every((a) => a.body.phase === "challenge")).toBe(true);
    expect(refused.map((a) => [a.status, a.body.code])).toEqual(refused.map(() => [409, "wrong_phase"]));
    const trail = await rows(sid);
    expect(trail).toHaveLength(before + written.length);
    expect(trail.filter((r) => r.phase !== "challenge" && r.phase !== "diverge" && r.phase !== "seconding")).toEqual([]);
    expect(trail.map((r) => r.seq)).toEqual(trail.map((_, i) => i + 1));
    for (const a of written) expect(trail.map((r) => r.id)).toContain(a.body.id);
    // every dialog was folded in before voting opened (else every later save would be refused)
    expect((await loadSession(db(), sid))!.state.dialog_count).toBe(trail.length);
    for (const m of seated)
      expect((await dialog(m, sid, { dialog_type: "vote", vote: "approve", confidence: 0.9, proposal_hash: s.proposal_hash })).status).toBe(
        201,
      );
    await progress();
    const after = await session(sid);
    expect(after.tally).toMatchObject({ approve: 9, votes: 9 });
    expect((await call(`/v1/events?type=council.tallied&subject=${sid}`)).body.events).toHaveLength(1);
  });
});

describe("a revoked token", () => {
  it("answers 401 for a wrong secret and for a revoked token, writing nothing", async () => {
    // the last test of this file: the revoked member is gone for good
    const { sid, seated } = await open();
    const n = (await rows(sid)).length;
    const [id] = seated[3]!.token.split(".");
    const forged = await call(`/v1/council/sessions/${sid}/dialog`, {
      token: `${id}.${"0".repeat(64)}`,
      body: { dialog_type: "develop", content: "x" },
    });
    expect([forged.status, forged.body.code]).toEqual([401, "unauthorized"]);
    await revokeCredential(db(), "node", id!, "test", new Date());
    const revoked = await dialog(seated[3]!, sid, { dialog_type: "develop", content: "Still here?" });
    expect([revoked.status, revoked.body.code]).toEqual([401, "unauthorized"]);
    // the token is checked before the body: a bad token with a bad body is still 401
    const both = await dialog(seated[3]!, sid, { dialog_type: "develop", content: "x", vote: "approve" });
    expect(both.status).toBe(401);
    expect(await rows(sid)).toHaveLength(n);
  });
});
