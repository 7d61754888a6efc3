import { describe, expect, it } from "vitest";
import { flatBody, MAX_PAYLOAD_BYTES, readEnvelope } from "../../../src/a2a/envelope";
import { modelTier } from "../../../src/a2a/tiers";
import { AppError } from "../../../src/lib/errors";

export const envelope = (over: Record<string, unknown> = {}) => ({
  protocol: "gep-a2a",
  protocol_version: "1.0.0",
  message_type: "hello",
  message_id: "msg_1707500000000_a1b2c3d4",
  sender_id: "node_0123456789abcdef",
  timestamp: "2026-02-10T00:00:00.000Z",
  payload: { model: "claude-sonnet-4" },
  ...over,
});

function problem(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error("no problem raised");
}

describe("the gep-a2a envelope", () => {
  it("accepts EvoMap's seven fields", () => {
    expect(readEnvelope(envelope(), "hello")).toEqual(envelope());
  });

  it("ignores keys beside the seven (EvoMap's proxy sends env_fingerprint there) and unknown payload keys", () => {
    const raw = envelope({ env_fingerprint: { model: "gpt-5" }, signature: "x", payload: { capabilities: {}, gene_count: null } });
    expect(readEnvelope(raw, "hello")).toEqual(envelope({ payload: { capabilities: {}, gene_count: null } }));
  });

  it("lists every missing field as 422 validation_failed", () => {
    const { protocol_version: _v, message_id: _m, timestamp: _t, ...partial } = envelope();
    const err = problem(() => readEnvelope(partial, "hello"));
    expect([err.status, err.code]).toEqual([422, "validation_failed"]);
    expect(err.errors!.map((e) => e.path).sort()).toEqual(["message_id", "protocol_version", "timestamp"]);
  });

  it.each([
    ["a missing protocol", { protocol: undefined }, 422, "validation_failed"],
    ["another protocol", { protocol: "a2a-json-rpc" }, 400, "unsupported_protocol"],
    ["another major version", { protocol_version: "2.0.0" }, 400, "unsupported_protocol"],
    ["a version that is not x.y.z", { protocol_version: "1" }, 422, "validation_failed"],
    ["a timestamp that is not ISO 8601", { timestamp: "yesterday" }, 422, "validation_failed"],
    ["a payload that is not an object", { payload: [1, 2] }, 422, "validation_failed"],
    ["a message id with spaces", { message_id: "msg 1" }, 422, "validation_failed"],
    ["another message type", { message_type: "publish" }, 422, "validation_failed"],
    ["an oversized payload", { payload: { identity_doc: "x".repeat(MAX_PAYLOAD_BYTES) } }, 413, "payload_too_large"],
  ])("answers %s with the documented problem", (_, over, status, code) => {
    const raw = Object.fromEntries(Object.entries(envelope(over)).filter(([, v]) => v !== undefined));
    const err = problem(() => readEnvelope(raw, "hello"));
    expect([err.status, err.code]).toEqual([status, code]);
  });

  it("refuses a body that is not an object", () => {
    for (const raw of [null, "hello", [envelope()], 42]) expect(problem(() => readEnvelope(raw)).status).toBe(422);
  });

  it("unwraps a wrapped REST body into its payload's fields with the envelope's sender", () => {
    expect(flatBody(envelope({ message_type: "heartbeat", payload: { gene_count: 3 } }))).toEqual({
      gene_count: 3,
      sender_id: "node_0123456789abcdef",
    });
    expect(flatBody({ sender_id: "x", gene_count: 3 })).toEqual({ sender_id: "x", gene_count: 3 });
  });
});

describe("model string → tier", () => {
  it.each([
    ["o3", 5],
    ["o4-mini", 5],
    ["claude-opus-4-high-thinking", 5],
    ["claude-opus-4", 4],
    ["claude-opus-5-5", 4],
    ["gpt-5", 4],
    ["gpt-5.5", 4],
    ["gemini-ultra", 4],
    ["gemini-2.5-pro", 3],
    ["gemini-3-pro-preview", 3],
    ["gpt-4.5", 3],
    ["claude-sonnet-4", 3],
    ["anthropic/claude-sonnet-4-5", 3],
    ["Claude-Sonnet-5-5", 3],
    ["sonnet", 3],
    ["gemini-2.0-flash-thinking", 2],
    ["gpt-4o", 2],
    ["claude-3-5-sonnet", 2],
    ["claude-sonnet", 2],
    ["gemini-2.0-flash", 1],
    ["gemini-3.7-flash", 1],
    ["gpt-4o-mini", 1],
    ["claude-haiku", 1],
    ["claude-3-5-haiku-latest", 1],
    ["llama-3-70b", 0],
    ["", 0],
  ])("%s is tier %i", (model, tier) => {
    expect(modelTier(model).tier).toBe(tier);
  });

  it("says unclassified when no model is reported", () => {
    expect(modelTier(undefined)).toEqual({ tier: 0, label: "unclassified" });
    expect(modelTier("claude-sonnet-4")).toEqual({ tier: 3, label: "advanced" });
  });
});
