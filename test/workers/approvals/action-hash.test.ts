import { describe, expect, it } from "vitest";
import { actionHash, canonicalJson } from "../../../src/approvals/action-hash";

describe("canonicalJson", () => {
  it("sorts keys at every depth, keeps array order and writes no whitespace", () => {
    expect(canonicalJson({ b: [3, { z: 1, a: 2 }], a: { y: null, x: "é" } })).toBe('{"a":{"x":"é","y":null},"b":[3,{"a":2,"z":1}]}');
  });

  it("gives the same bytes whatever order the keys were written in", () => {
    expect(canonicalJson({ kind: "k", params: { to: "b", from: "a" } })).toBe(canonicalJson({ params: { from: "a", to: "b" }, kind: "k" }));
  });

  it("drops undefined members like JSON does and refuses values that are not plain JSON", () => {
    expect(canonicalJson({ a: 1, b: undefined })).toBe('{"a":1}');
    expect(() => canonicalJson({ a: new Date(0) })).toThrow(TypeError);
    expect(() => canonicalJson({ a: Number.NaN })).toThrow(TypeError);
  });
});

describe("actionHash", () => {
  it("is the SHA-256 hex of the canonical JSON of {kind, subject, params} (checked against node:crypto)", async () => {
    // node -e 'crypto.createHash("sha256").update(`{"kind":"k","params":{"a":1,"b":[2,{"c":"é","d":null}]},"subject":"s"}`)'
    expect(await actionHash({ subject: "s", params: { b: [2, { d: null, c: "é" }], a: 1 }, kind: "k" })).toBe(
      "dc76517bd3881b1f2b0c3b0ce6e88c72dd61e3d321bc410b6d6cc1bd6a010fec",
    );
  });

  it("changes when any parameter changes", async () => {
    const base = { kind: "topology_reroute", subject: "billing:alice", params: { to_agent: "bob" } };
    expect(await actionHash(base)).not.toBe(await actionHash({ ...base, params: { to_agent: "carol" } }));
  });
});
