import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { routingOverrides } from "../../../src/db/schema";
import { call } from "../../factories";

const hex = (n: number) => n.toString(16).padStart(16, "0");

describe("GET /v1/topology with a long override history", () => {
  it("still shows an old override that dispatch applies, beside 200 newer rolled-back ones", async () => {
    const base = {
      taskClass: "billing",
      toAgent: "ov-b",
      observeUntil: "2026-01-02T00:00:00.000Z",
      baselineRejectRate: 0.8,
      baselineSamples: 5,
    };
    const rows: (typeof routingOverrides.$inferInsert)[] = [
      {
        ...base,
        id: `ovr_${hex(1)}`,
        proposalId: `tprop_${hex(1)}`,
        approvalId: `apr_${hex(1)}`,
        fromAgent: "ov-a",
        status: "confirmed",
        approvedAt: "2026-01-01T00:00:00.000Z",
      },
    ];
    for (let i = 2; i <= 201; i++) {
      const at = new Date(Date.parse("2026-02-01T00:00:00.000Z") + i * 60_000).toISOString();
      rows.push({
        ...base,
        id: `ovr_${hex(i)}`,
        proposalId: `tprop_${hex(i)}`,
        approvalId: `apr_${hex(i)}`,
        fromAgent: `ov-${i}`,
        status: "rolled_back",
        approvedAt: at,
        resolvedAt: at,
        resolution: "not_better",
      });
    }
    const db = getDb(env.DB);
    for (let i = 0; i < rows.length; i += 5) await db.insert(routingOverrides).values(rows.slice(i, i + 5));
    const view = await call("/v1/topology");
    expect(view.status).toBe(200);
    const inForce = view.body.overrides.filter((o: { status: string }) => o.status !== "rolled_back");
    expect(inForce.map((o: { override_id: string; from_agent: string }) => [o.override_id, o.from_agent])).toEqual([
      [`ovr_${hex(1)}`, "ov-a"],
    ]);
  });
});
