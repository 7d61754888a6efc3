import { describe, expect, it } from "vitest";
import { call } from "../../factories";

/** The council's public search and filter inputs: whatever reaches SQL is validated first (issue 18 item 6). */
describe("council query inputs", () => {
  it("refuses a principle search with a NUL or another control character (422 naming q)", async () => {
    for (const q of ["abc%00def", "%00", "council%01", "a%0Ab"]) {
      const res = await call(`/v1/governance/principles?q=${q}`, { token: null });
      expect([res.status, res.body.code], q).toEqual([422, "validation_failed"]);
      expect(res.body.errors).toEqual([expect.objectContaining({ path: "q" })]);
    }
    expect((await call("/v1/governance/principles?q=digest", { token: null })).status).toBe(200);
  });

  it("refuses a session-list cursor that no page handed out (422 naming cursor), on /v1 and /a2a", async () => {
    for (const cursor of ["a%00b", "2020%7Cx%00", "garbage", "2026-01-01T00:00:00.000Z%7Cdelib_zz"]) {
      for (const path of [`/v1/council/sessions?cursor=${cursor}`, `/a2a/council/history?cursor=${cursor}`]) {
        const res = await call(path, { token: null });
        expect([res.status, res.body.code], path).toEqual([422, "validation_failed"]);
        expect(res.body.errors, path).toEqual([expect.objectContaining({ path: "cursor" })]);
      }
    }
    const ok = await call(`/v1/council/sessions?cursor=${encodeURIComponent("2999-01-01T00:00:00.000Z|delib_0123456789abcdef")}`, {
      token: null,
    });
    expect(ok.status).toBe(200);
  });
});
