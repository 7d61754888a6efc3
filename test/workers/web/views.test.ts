import { describe, expect, it } from "vitest";
import type { ApprovalView } from "../../../src/approvals/view";
import { ApprovalCard, OUTCOMES } from "../../../src/web/pages/console-approvals";
import { forest } from "../../../src/web/pages/console-employees";
import { RolesPage } from "../../../src/web/pages/console-tasks";

const viewer = { name: "ana", role: "manager" as const, csrf: "c".repeat(64) };
const NOW = new Date("2026-12-01T12:00:00.000Z");

function approval(status: string): ApprovalView {
  return {
    approval_id: `apr_${status}`,
    action_kind: "topology_reroute",
    subject: "billing:alice",
    params: {},
    action_hash: "0".repeat(64),
    evidence: { samples: 5 },
    status,
    requested_by: "topology",
    requested_at: "2026-12-01T11:00:00.000Z",
    expires_at: "2026-12-01T12:30:00.000Z",
    channels: [],
  } as unknown as ApprovalView;
}

describe("the console's views", () => {
  it("tells the four outcomes apart by word, symbol and class, never by colour alone", () => {
    const seen = new Set<string>();
    for (const status of ["approved", "denied", "expired", "no_channel"]) {
      const html = String(ApprovalCard({ a: approval(status), viewer, now: NOW, decide: "yes" }));
      const o = OUTCOMES[status]!;
      expect(html).toContain(`data-outcome="${status}"`);
      expect(html).toContain(`${o.symbol}</span> ${o.label}`);
      expect(html).toContain(`o-${status}`);
      // An ended approval offers no decision.
      expect(html).not.toContain("/decide");
      seen.add(`${o.symbol} ${o.label}`);
    }
    expect(seen.size).toBe(4);
    const pending = String(ApprovalCard({ a: approval("pending"), viewer, now: NOW, decide: "yes" }));
    expect(pending).toContain('data-countdown="2026-12-01T12:30:00.000Z"');
    expect(pending).toContain("in 30 min");
    expect(pending).toContain(`value="${viewer.csrf}"`);
  });

  it("shows unknown usage and cost as unknown, never as 0", () => {
    const html = String(
      RolesPage({
        viewer,
        taskId: "t1",
        title: "T",
        roles: { task_id: "t1", role_turns: [], chain: { ok: true } },
        cost: [
          {
            role: "executor",
            runtime: "codex",
            model: "gpt-5.5",
            stages: 2,
            stages_with_usage: 0,
            stages_without_usage: 2,
            usage: "unknown",
            cost_usd: "unknown",
            stages_without_cost: 2,
          },
        ],
      }),
    );
    expect(html).toContain('<span class="unknown">unknown</span>');
    expect(html).not.toMatch(/<td>0<\/td>/);
  });

  it("builds the org forest from reports_to, an unknown parent making a root", () => {
    const e = (id: string, reports_to: string | null) => ({ employee_id: id, reports_to }) as never;
    const roots = forest([e("lead", null), e("a", "lead"), e("b", "lead"), e("orphan", "gone")]);
    expect(roots.map((r) => r.e.employee_id)).toEqual(["lead", "orphan"]);
    expect(roots[0]!.children.map((c) => c.e.employee_id)).toEqual(["a", "b"]);
  });
});
