import { describe, expect, it } from "vitest";
import { parseSlackAction, verifySlackRequest } from "../../../src/approvals/slack";

const SECRET = "test-slack-signing-secret";
// node -e 'crypto.createHmac("sha256","test-slack-signing-secret").update("v0:1700000000:payload=x").digest("hex")'
const KNOWN = "v0=88a0d90bd5325fd46327fa87f5fb138f4c859cdb2342dc9c7f4179524f165420";
const AT = 1_700_000_000_000;

describe("verifySlackRequest (v0 HMAC-SHA256 over v0:<ts>:<body>)", () => {
  it("accepts the signature Slack would compute", async () => {
    expect(await verifySlackRequest(SECRET, { signature: KNOWN, timestamp: "1700000000" }, "payload=x", AT)).toEqual({ ok: true });
  });

  it("refuses a signature over another body, with another secret, or malformed", async () => {
    expect(await verifySlackRequest(SECRET, { signature: KNOWN, timestamp: "1700000000" }, "payload=y", AT)).toEqual({
      ok: false,
      reason: "bad_signature",
    });
    expect(await verifySlackRequest("other", { signature: KNOWN, timestamp: "1700000000" }, "payload=x", AT)).toMatchObject({ ok: false });
    expect(await verifySlackRequest(SECRET, { signature: "v0=zz", timestamp: "1700000000" }, "payload=x", AT)).toMatchObject({ ok: false });
  });

  it("allows five minutes of skew either way and refuses one second more", async () => {
    const sig = { signature: KNOWN, timestamp: "1700000000" };
    expect((await verifySlackRequest(SECRET, sig, "payload=x", AT + 300_000)).ok).toBe(true);
    expect((await verifySlackRequest(SECRET, sig, "payload=x", AT - 300_000)).ok).toBe(true);
    expect(await verifySlackRequest(SECRET, sig, "payload=x", AT + 301_000)).toEqual({ ok: false, reason: "stale_timestamp" });
    expect(await verifySlackRequest(SECRET, sig, "payload=x", AT - 301_000)).toEqual({ ok: false, reason: "stale_timestamp" });
  });

  it("refuses without a secret, without headers, or with a timestamp that is not a number", async () => {
    expect(await verifySlackRequest(undefined, { signature: KNOWN, timestamp: "1700000000" }, "payload=x", AT)).toEqual({
      ok: false,
      reason: "no_secret",
    });
    expect(await verifySlackRequest(SECRET, { timestamp: "1700000000" }, "payload=x", AT)).toEqual({
      ok: false,
      reason: "missing_headers",
    });
    expect(await verifySlackRequest(SECRET, { signature: KNOWN, timestamp: "17e8" }, "payload=x", AT)).toMatchObject({ ok: false });
  });
});

describe("parseSlackAction", () => {
  const form = (payload: unknown) => `payload=${encodeURIComponent(JSON.stringify(payload))}`;
  const press = (action_id: string, value: string) => ({ type: "block_actions", user: { id: "U123" }, actions: [{ action_id, value }] });

  it("reads who pressed which button on which approval", () => {
    expect(parseSlackAction(form(press("crewplane_deny", "apr_0123456789abcdef")))).toEqual({
      ok: true,
      value: { slackUserId: "U123", approvalId: "apr_0123456789abcdef", decision: "deny" },
    });
  });

  it("refuses other interactions, other buttons and values that are not approval ids", () => {
    expect(parseSlackAction(form({ type: "view_submission", user: { id: "U1" } })).ok).toBe(false);
    expect(parseSlackAction(form(press("something_else", "apr_0123456789abcdef"))).ok).toBe(false);
    expect(parseSlackAction(form(press("crewplane_approve", "apr_../../x"))).ok).toBe(false);
    expect(parseSlackAction("payload=%7Bnot json").ok).toBe(false);
    expect(parseSlackAction("nothing=here").ok).toBe(false);
  });
});
