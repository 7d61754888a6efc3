import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { manager, setConfig, tick } from "../../factories/org";

/*
 * The tick reads its inputs besides the evidence as one statement (src/topology/inputs.ts). A value
 * built in SQL has a size limit that a list of rows does not (D1: 2,000,000 bytes per string or row;
 * the local D1 allows more): a large org must not stop the tick for good. Its own file: the org it
 * builds would be in every other test's reads.
 */

describe("a tick over a large org", () => {
  it("still runs when the org written out in one value would pass SQLite's size limit", async () => {
    await manager("big");
    // 100k employees with the longest ids allowed (63 characters), four levels under one root.
    const id = (x: string) => `printf('e%062d', ${x})`;
    await env.DB.prepare(
      `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000)
       INSERT INTO employees (id, name, reports_to, runtime, model_preferred, created_at, updated_at)
       SELECT ${id("x")}, 'E', CASE WHEN x = 1 THEN NULL ELSE ${id("x / 4 + 1")} END, 'offline', 'offline',
         '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z' FROM c`,
    ).run();
    await setConfig("topology_evolution", { enabled: true, tick_secs: 60 });
    expect(await tick("topology")).toMatchObject({ enabled: true, ran: true, proposal: { reason: "no_candidate" } });
  });
});
