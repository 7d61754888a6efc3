import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { approvalsConfig } from "../../../src/approvals/config";
import { topologyConfig } from "../../../src/topology/config";
import { REROUTE_ACTION_KIND } from "../../../src/topology/proposals";
import { call } from "../../factories";
import { advanceClock, DONE, FAILED, manager, putEmployee, setConfig, settledTasks, team, tick } from "../../factories/org";

/*
 * The tick reuses what it read besides the evidence while `topology_inputs`' token says none of it has
 * changed (src/topology/inputs.ts, triggers in migrations/0009). These prove the token follows every
 * write that matters and nothing else, that a change is read at once, and that a reused read is judged
 * at the tick's own time.
 */

const token = async () => (await env.DB.prepare("SELECT token FROM topology_inputs WHERE id = 1").first<{ token: string }>())!.token;

/** Runs `sql` and says whether the inputs' token changed with it. */
async function changesToken(sql: string): Promise<boolean> {
  const before = await token();
  const result = await env.DB.prepare(sql).run();
  expect(result.success).toBe(true);
  return (await token()) !== before;
}

const AT = "'2026-01-01T00:00:00.000Z'";
// Through the constants the code reads them by, so renaming one without the triggers fails here.
const TOPOLOGY = `'${topologyConfig.name}'`;
const APPROVALS = `'${approvalsConfig.name}'`;
const REROUTE = `'${REROUTE_ACTION_KIND}'`;

describe("the topology tick's inputs token", () => {
  it("changes with every write to what the tick reads, and with nothing else", async () => {
    // In order; true: the write must change the token.
    const writes: [string, boolean][] = [
      [`INSERT INTO settings (section, value, updated_at) VALUES (${APPROVALS}, '{}', ${AT})`, true],
      [`UPDATE settings SET value = '{"slack":{"enabled":false}}' WHERE section = ${APPROVALS}`, true],
      [`DELETE FROM settings WHERE section = ${APPROVALS}`, true],
      [`INSERT INTO settings (section, value, updated_at) VALUES (${TOPOLOGY}, '{}', ${AT})`, true],
      [`UPDATE settings SET value = '{"enabled":false}' WHERE section = ${TOPOLOGY}`, true],
      [`INSERT INTO settings (section, value, updated_at) VALUES ('dispatch', '{}', ${AT})`, false],
      [`UPDATE settings SET value = '{"policy":"round_robin"}' WHERE section = 'dispatch'`, false],
      [
        `INSERT INTO credentials (id, kind, name, role, secret_hash, created_at) VALUES ('op_t', 'operator', 'tess', 'viewer', 'h', ${AT})`,
        true,
      ],
      [`UPDATE credentials SET name = 'tessa' WHERE id = 'op_t'`, false],
      [`UPDATE credentials SET role = 'manager' WHERE id = 'op_t'`, true],
      [`UPDATE credentials SET expires_at = ${AT} WHERE id = 'op_t'`, true],
      [`UPDATE credentials SET revoked_at = ${AT} WHERE id = 'op_t'`, true],
      [`DELETE FROM credentials WHERE id = 'op_t'`, true],
      [`INSERT INTO credentials (id, kind, name, secret_hash, created_at) VALUES ('run_t', 'runner', 'box', 'h', ${AT})`, false],
      [`UPDATE credentials SET revoked_at = ${AT} WHERE id = 'run_t'`, false],
      [
        `INSERT INTO approvals (id, action_kind, subject, params, action_hash, evidence, status, requested_by, requested_at, expires_at, channels)
           VALUES ('apr_t', ${REROUTE}, 's', '{}', 'h', '{}', 'pending', 'test', ${AT}, ${AT}, '[]')`,
        true,
      ],
      [`UPDATE approvals SET note = 'seen', decided_via = 'api' WHERE id = 'apr_t'`, false],
      [`UPDATE approvals SET status = 'denied' WHERE id = 'apr_t'`, true],
      [`UPDATE approvals SET expires_at = '2026-01-02T00:00:00.000Z' WHERE id = 'apr_t'`, true],
      [`UPDATE approvals SET consumed_at = ${AT} WHERE id = 'apr_t'`, false],
      [
        `INSERT INTO approvals (id, action_kind, subject, params, action_hash, evidence, status, requested_by, requested_at, expires_at, channels)
           VALUES ('apr_o', 'project_merge', 's', '{}', 'h', '{}', 'pending', 'test', ${AT}, ${AT}, '[]')`,
        false,
      ],
      [`UPDATE approvals SET status = 'approved' WHERE id = 'apr_o'`, false],
      [`DELETE FROM approvals WHERE id = 'apr_o'`, false],
      [
        `INSERT INTO topology_proposals (id, task_class, from_agent, to_agent, evidence, approval_id, status, created_at)
           VALUES ('tprop_t', 'c', 'a', 'b', '{}', 'apr_t', 'pending', ${AT})`,
        true,
      ],
      [`UPDATE topology_proposals SET status = 'denied' WHERE id = 'tprop_t'`, true],
      [
        `INSERT INTO routing_overrides (id, proposal_id, approval_id, task_class, from_agent, to_agent, status, approved_at, observe_until, baseline_reject_rate, baseline_samples)
           VALUES ('ovr_t', 'tprop_t', 'apr_t', 'c', 'a', 'b', 'active', ${AT}, ${AT}, 0.5, 10)`,
        true,
      ],
      [`UPDATE routing_overrides SET status = 'rolled_back' WHERE id = 'ovr_t'`, true],
      [`DELETE FROM routing_overrides WHERE id = 'ovr_t'`, true],
      [`DELETE FROM topology_proposals WHERE id = 'tprop_t'`, true],
      [`DELETE FROM approvals WHERE id = 'apr_t'`, true],
      [
        `INSERT INTO employees (id, name, runtime, model_preferred, created_at, updated_at) VALUES ('e_t', 'E', 'offline', 'offline', ${AT}, ${AT})`,
        true,
      ],
      [`UPDATE employees SET name = 'Eve', model_preferred = 'other', revision = revision + 1 WHERE id = 'e_t'`, false],
      [`UPDATE employees SET reports_to = 'e_t' WHERE id = 'e_t'`, true],
      [`DELETE FROM employees WHERE id = 'e_t'`, true],
      [`INSERT INTO clock_state (id, offset_ms, updated_at) VALUES (2, 0, ${AT})`, false],
    ];
    const wrong: string[] = [];
    for (const [sql, expected] of writes)
      if ((await changesToken(sql)) !== expected) wrong.push(`${expected ? "kept" : "changed"}: ${sql}`);
    expect(wrong).toEqual([]);
  });
});

describe("a tick over inputs it read before", () => {
  /**
   * An org where nothing qualifies yet (tests in a file share one database, hence the prefix): p-a
   * fails class p often, but p-b, who does it well, reports to nobody.
   */
  async function quietOrg(p: string) {
    const boss = await manager(`${p}-boss`);
    await team(`${p}-lead`, [`${p}-a`]);
    await putEmployee(`${p}-b`);
    await setConfig("topology_evolution", { enabled: true, tick_secs: 60, min_samples: 4 });
    await settledTasks(`${p}-a`, p, [FAILED, FAILED, FAILED, DONE]);
    await settledTasks(`${p}-b`, p, [DONE, DONE, DONE, DONE]);
    await advanceClock(61_000);
    // Whatever is due first (the very first fold in this database) happens here and writes.
    expect(await tick("topology")).toMatchObject({ ran: true, proposal: { reason: "no_candidate" } });
    await advanceClock(61_000);
    return boss;
  }

  it("reads only its evidence while nothing else it read has changed, and everything again, in the same one batch, after a change that matters", async () => {
    await quietOrg("r");
    const read = await tick("topology");
    expect(read).toMatchObject({ ran: true, proposal: { reason: "no_candidate" } });
    expect(read.proposal.skipped).toContainEqual({ task_class: "r", agent: "r-a", reason: "no_better_sibling" });
    await advanceClock(61_000);
    expect(await tick("topology")).toMatchObject({ ran: true, batches: 1, inputs: "reused", proposal: { reason: "no_candidate" } });

    // r-b moves under r-lead: now a sibling that does better. The snapshot cannot know; the token does.
    await putEmployee("r-b", { reports_to: "r-lead" });
    await advanceClock(61_000);
    const moved = await tick("topology");
    expect(moved).toMatchObject({ ran: true, batches: 1, inputs: "read" });
    expect(moved.proposal).toMatchObject({ task_class: "r", from_agent: "r-a", to_agent: "r-b", status: "pending" });
  });

  it("judges a reused read at its own time: a decider whose token expired since is no decider", async () => {
    const boss = await quietOrg("d");
    // The boss is the only decider left, and only for two more minutes.
    const soon = new Date(Date.parse((await call("/v1/admin/clock")).body.now) + 120_000).toISOString();
    await env.DB.prepare("UPDATE credentials SET revoked_at = ?1 WHERE kind = 'operator' AND id <> ?2 AND revoked_at IS NULL")
      .bind(soon, boss.id)
      .run();
    await env.DB.prepare("UPDATE credentials SET expires_at = ?1 WHERE id = ?2").bind(soon, boss.id).run();
    expect(await tick("topology")).toMatchObject({ inputs: "read", proposal: { reason: "no_candidate" } });
    await advanceClock(61_000);
    expect(await tick("topology")).toMatchObject({ inputs: "reused", proposal: { reason: "no_candidate" } });

    await advanceClock(61_000); // past the expiry; nothing was written
    const refused = await tick("topology");
    expect(refused).toMatchObject({ ran: true, batches: 1, inputs: "reused", refused: "approval_broker_unavailable" });
  });

  it("reads again when the clock went back (the test clock), rather than judge an older instant by a newer read", async () => {
    await quietOrg("k");
    const now = Date.parse((await call("/v1/admin/clock")).body.now);
    await tick("topology");
    await advanceClock(61_000);
    expect(await tick("topology")).toMatchObject({ inputs: "reused" });
    // Back to before anything this test read (the org was set up from three minutes before `now`).
    expect((await call("/v1/admin/clock", { body: { set: new Date(now - 10 * 60_000).toISOString() } })).status).toBe(200);
    const back = await tick("topology");
    expect(back).toMatchObject({ ran: true });
    expect(back.inputs).toBe("read");
  });
});
