import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import type { CredentialKind } from "../../../src/db/schema";
import { mintCredential } from "../../../src/lib/credentials";
import { encodeCursor } from "../../../src/lib/paging";
import { call, createOperator, createRunner } from "../../factories";

/** Mints `n` tokens directly, half of them in the same millisecond (so the id breaks the tie). */
async function seed(kind: CredentialKind, n: number, prefix: string) {
  const db = getDb(env.DB);
  const base = Date.parse("2020-01-01T00:00:00.000Z");
  const creds = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      mintCredential(
        db,
        { kind, name: `${prefix}-${i}`, role: kind === "operator" ? "viewer" : undefined },
        new Date(base + (i % 2 === 0 ? 0 : i)),
      ),
    ),
  );
  await db.batch(creds.map((c) => c.insert) as never);
  return creds.map((c) => c.id);
}

async function pageAll(path: string, key: "runners" | "operators", limit: number) {
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res: Awaited<ReturnType<typeof call>> = await call(`${path}?limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`);
    expect(res.status).toBe(200);
    expect(res.body[key].length).toBeLessThanOrEqual(limit);
    seen.push(...res.body[key].map((r: { runner_id?: string; operator_id?: string }) => r.runner_id ?? r.operator_id));
    cursor = res.body.next_cursor;
    pages++;
    expect(pages).toBeLessThan(200);
  } while (cursor);
  return { seen, pages };
}

describe("admin lists page as API.md says (limit default 50 max 500, cursor, next_cursor)", () => {
  it("walks every runner exactly once, oldest first, with next_cursor null on the last page", async () => {
    const ids = await seed("runner", 45, "fleet");
    const all = (await call("/v1/admin/runners?limit=500")).body;
    expect(all.next_cursor).toBeNull();
    const { seen, pages } = await pageAll("/v1/admin/runners", "runners", 7);
    expect(seen).toEqual(all.runners.map((r: { runner_id: string }) => r.runner_id));
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(expect.arrayContaining(ids));
    expect(pages).toBe(Math.ceil(seen.length / 7));
  });

  it("returns 50 operators by default with a next_cursor when there are more", async () => {
    await seed("operator", 55, "crowd");
    const first = await call("/v1/admin/operators");
    expect(first.status).toBe(200);
    expect(first.body.operators).toHaveLength(50);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const rest = await call(`/v1/admin/operators?cursor=${first.body.next_cursor}`);
    expect(rest.body.operators.length).toBeGreaterThanOrEqual(5);
    const firstIds = new Set(first.body.operators.map((o: { operator_id: string }) => o.operator_id));
    expect(rest.body.operators.some((o: { operator_id: string }) => firstIds.has(o.operator_id))).toBe(false);
  });

  it("neither repeats nor skips a row when a token is minted between pages", async () => {
    const before = (await call("/v1/admin/runners?limit=500")).body.runners.length;
    const first = await call("/v1/admin/runners?limit=3");
    const late = await createRunner("minted-between-pages");
    const { seen } = await (async () => {
      const rest: string[] = first.body.runners.map((r: { runner_id: string }) => r.runner_id);
      let cursor = first.body.next_cursor;
      while (cursor) {
        const res = await call(`/v1/admin/runners?limit=3&cursor=${cursor}`);
        rest.push(...res.body.runners.map((r: { runner_id: string }) => r.runner_id));
        cursor = res.body.next_cursor;
      }
      return { seen: rest };
    })();
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toHaveLength(before + 1);
    expect(seen).toContain(late.id);
  });

  it.each([
    ["a zero limit", "limit=0", "limit"],
    ["a limit over 500", "limit=501", "limit"],
    ["a limit that is not a number", "limit=ten", "limit"],
    ["a cursor that is not base64url", "cursor=not-a-cursor!", "cursor"],
    ["a cursor of the wrong shape", `cursor=${encodeCursor([1, 2, 3])}`, "cursor"],
    ["an overlong cursor", `cursor=${"A".repeat(2000)}`, "cursor"],
  ])("answers %s with 422 naming the parameter", async (_name, query, path) => {
    for (const list of ["/v1/admin/runners", "/v1/admin/operators"]) {
      const res = await call(`${list}?${query}`);
      expect(res.status, list).toBe(422);
      expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    }
  });

  it("accepts limit=500", async () => {
    const res = await call("/v1/admin/operators?limit=500");
    expect(res.status).toBe(200);
  });

  it("reads one runner by id, so a client need not page to check its own token", async () => {
    const runner = await createRunner("single");
    const res = await call(`/v1/admin/runners/${runner.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ runner_id: runner.id, name: "single", revoked_at: null, last_poll_at: null, leased_jobs: 0 });
    const operatorId = (await createOperator("viewer", "not-a-runner")).split(".")[0];
    expect((await call(`/v1/admin/runners/${operatorId}`)).status).toBe(404);
  });
});
