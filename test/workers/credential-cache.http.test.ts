import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, createRunner } from "../factories";
import { sleep } from "../factories/inbox";

const lease = (token: string) => call("/v1/runner/lease", { token, body: { capacity: 1, wait_ms: 0, runtimes: ["offline"] } });

describe("per-isolate credential cache", () => {
  it("stops a token revoked by another isolate within 5 s, however warm this isolate's cache was", async () => {
    const runner = await createRunner("revoked-elsewhere");
    expect((await lease(runner.token)).status).toBe(200); // its row is now cached here
    // Another isolate revokes it: only D1 changes, this isolate is not told.
    const revokedAt = Date.now();
    await env.DB.prepare(`UPDATE credentials SET revoked_at = ? WHERE id = ?`).bind(new Date().toISOString(), runner.id).run();
    // Whatever this isolate cached, a request made 5 s after the revocation is refused.
    await sleep(Math.max(0, revokedAt + 5_000 - Date.now()));
    expect((await lease(runner.token)).status).toBe(401);
    // and from then on
    expect((await lease(runner.token)).status).toBe(401);
  });

  it("stops a token revoked through this isolate at once", async () => {
    const runner = await createRunner("revoked-here");
    expect((await lease(runner.token)).status).toBe(200);
    expect((await call(`/v1/admin/runners/${runner.id}`, { method: "DELETE" })).status).toBe(200);
    expect((await lease(runner.token)).status).toBe(401);
  });
});
