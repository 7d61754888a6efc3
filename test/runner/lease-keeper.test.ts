import { describe, expect, it } from "vitest";
import { leaseLengthMs } from "../../local-runner/src/lease-keeper.ts";

describe("leaseLengthMs", () => {
  const now = Date.parse("2026-11-29T12:00:00.000Z");

  it("is the time left on the lease when it was handed out", () => {
    expect(leaseLengthMs("2026-11-29T12:01:00.000Z", now)).toEqual({ ms: 60_000, skewed: false });
  });

  it("extends promptly when the lease is (nearly) over on arrival", () => {
    expect(leaseLengthMs("2026-11-29T11:59:00.000Z", now)).toEqual({ ms: 1000, skewed: true });
  });

  it("falls back to 60 s when the server clock is far ahead of ours", () => {
    expect(leaseLengthMs("2026-12-06T12:01:00.000Z", now)).toEqual({ ms: 60_000, skewed: true });
  });

  it("trusts the lease length the Worker states, even when its test clock is days ahead", () => {
    expect(leaseLengthMs("2026-12-06T12:01:00.000Z", now, 30_000)).toEqual({ ms: 30_000, skewed: false });
  });
});
