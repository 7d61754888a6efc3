import { describe, expect, it } from "vitest";
import { checkpointBytes, entryBytes, entryHash, fromBase64url, GENESIS_HASH, stageIdOf } from "../../../src/audit/chain";
import { isPublicType } from "../../../src/audit/export";
import { keyId, loadSigner } from "../../../src/audit/keys";
import { canonicalJson } from "../../../src/jobs/canonical";

const TEST_KEY = {
  crv: "Ed25519",
  d: "Ttp-5I1ycC88FPU8UaLLKXxvpgohS0oJlDPjzlPEhE4",
  x: "aqc1o5cqNyln50UDBmIOCU7HcHDHLVvOjNDCyyl7NE8",
  kty: "OKP",
};
const OTHER_KEY = {
  crv: "Ed25519",
  d: "aTTkM72CmiKr8lZQWtYLsgBoQLlp6-kt3s2AfeqrBdY",
  x: "vyvkzen0JmxuON-ZYLdbg83Fc0frmMMzFAKSRVc1Ut4",
  kty: "OKP",
};

const decode = (b: Uint8Array) => new TextDecoder().decode(b);

describe("audit chain formats", () => {
  it("orders members by UTF-16 code units at every depth and drops undefined ones", () => {
    const value = { b: 1, "😀": 0, é: 2, Z: 3, _: { "10": 1, "9": 2, u: undefined }, a: [{ d: null, c: undefined }, undefined] };
    expect(canonicalJson(value)).toBe('{"Z":3,"_":{"10":1,"9":2},"a":[{"d":null},null],"b":1,"é":2,"😀":0}');
  });

  it("hashes exactly the canonical JSON of {created_at, id, payload, prev_hash, seq, subject, type}", async () => {
    const entry = {
      seq: 1,
      prev_hash: GENESIS_HASH,
      id: 7,
      type: "operator.created",
      subject: null,
      payload: { z: 1, a: { y: [2, { c: "é", b: null }] } },
      created_at: "2026-12-01T00:00:00.000Z",
    };
    expect(decode(entryBytes({ ...entry, extra: "ignored" } as never))).toBe(
      `{"created_at":"2026-12-01T00:00:00.000Z","id":7,"payload":{"a":{"y":[2,{"b":null,"c":"é"}]},"z":1},"prev_hash":"${GENESIS_HASH}","seq":1,"subject":null,"type":"operator.created"}`,
    );
    const digest = await crypto.subtle.digest("SHA-256", entryBytes(entry));
    expect(await entryHash(entry)).toBe(Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join(""));
    // A ref is hashed when present and no key at all when absent.
    const withRef = { ...entry, ref: { role_turn: { task_id: "t", seq: 3, hash: "h" } } };
    expect(decode(entryBytes(withRef))).toContain(`"ref":{"role_turn":{"hash":"h","seq":3,"task_id":"t"}},"seq":1`);
    expect(await entryHash(withRef)).not.toBe(await entryHash(entry));
  });

  it("signs the canonical JSON of {at, hash, kid, seq, v}", () => {
    expect(decode(checkpointBytes({ seq: 12, hash: "ab", at: "2026-12-01T00:00:10.000Z", kid: "k1" }))).toBe(
      '{"at":"2026-12-01T00:00:10.000Z","hash":"ab","kid":"k1","seq":12,"v":"crewplane-audit-checkpoint/1"}',
    );
  });

  it("tells public event types by the public stream's prefixes, and stage-closing events by their stage_id", () => {
    expect(isPublicType("council.decided")).toBe(true);
    expect(isPublicType("node.registered")).toBe(true);
    expect(isPublicType("operator.created")).toBe(false);
    expect(isPublicType("job.queued")).toBe(false);
    expect(stageIdOf("team_stage_completed", { stage_id: "st_1" })).toBe("st_1");
    expect(stageIdOf("goal_stage_failed", { stage_id: "st_2" })).toBe("st_2");
    expect(stageIdOf("team_packet_fidelity", { stage_id: "st_1" })).toBeNull();
    expect(stageIdOf("team_stage_completed", {})).toBeNull();
  });
});

describe("the signing key (AUDIT_SIGNING_KEY)", () => {
  it("derives the key id from the public key and signs what the public key verifies", async () => {
    const state = await loadSigner(JSON.stringify(TEST_KEY));
    if (!state.ok) throw new Error(state.reason);
    expect(state.signer.kid).toBe(await keyId(TEST_KEY.x));
    expect(state.signer.kid).toMatch(/^[0-9a-f]{16}$/);
    const msg = new TextEncoder().encode("m");
    const sig = fromBase64url(await state.signer.sign(msg));
    expect(sig.length).toBe(64);
    const pub = await crypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", x: TEST_KEY.x }, { name: "Ed25519" }, false, ["verify"]);
    expect(await crypto.subtle.verify({ name: "Ed25519" }, pub, sig, msg)).toBe(true);
  });

  it("refuses an absent, malformed or mismatched key (fail closed: nothing is signed)", async () => {
    expect(await loadSigner(undefined)).toEqual({ ok: false, reason: "no_key" });
    expect(await loadSigner("not json")).toEqual({ ok: false, reason: "invalid_key" });
    expect(await loadSigner(JSON.stringify({ ...TEST_KEY, crv: "P-256" }))).toEqual({ ok: false, reason: "invalid_key" });
    // d of one key with x of another: a signature nobody could verify under x.
    expect(await loadSigner(JSON.stringify({ ...TEST_KEY, x: OTHER_KEY.x }))).toEqual({ ok: false, reason: "invalid_key" });
  });
});
