import { describe, expect, it } from "vitest";
import { call } from "../../factories";
import { send } from "../../factories/http";
import { snapshot } from "../../factories/state";

// Each value is written as it appears in the JSON text, so escapes arrive exactly as a client sends them.
const UNSAFE_NAMES: [string, string][] = [
  ["a control character (BEL)", String.raw`"ring\u0007"`],
  ["a newline (log injection)", String.raw`"ok\nFAKE LOG LINE"`],
  ["a C1 control (NEL)", String.raw`"a\u0085b"`],
  ["a right-to-left override", String.raw`"invoice\u202Egpj.exe"`],
  ["a left-to-right embedding", String.raw`"a\u202Ab"`],
  ["a bidi isolate", String.raw`"a\u2066b\u2069"`],
  ["a line separator", String.raw`"a\u2028b"`],
  ["a lone high surrogate", String.raw`"bad\ud800"`],
  ["a lone low surrogate", String.raw`"\udc00bad"`],
  ["a reversed surrogate pair", String.raw`"\udc00\ud800"`],
];

const endpoints: [string, (name: string) => string][] = [
  ["/v1/admin/operators", (name) => `{"name":${name},"role":"viewer"}`],
  ["/v1/admin/runners", (name) => `{"name":${name}}`],
];

describe("names refuse control characters, bidi overrides and lone surrogates (422 naming the field)", () => {
  for (const [path, body] of endpoints) {
    it.each(UNSAFE_NAMES)(`${path} refuses a name with %s and stores nothing`, async (_what, name) => {
      const before = await snapshot();
      const res = await send(path, { headers: { "content-type": "application/json" }, body: body(name) });
      expect(res.status).toBe(422);
      expect(res.json.code).toBe("validation_failed");
      expect(res.json.errors).toEqual([expect.objectContaining({ path: "name" })]);
      expect(await snapshot()).toEqual(before);
    });
  }

  it("keeps names in any script, with emoji (well-formed surrogate pairs) and inner spaces", async () => {
    for (const name of ["Ана Ковальчук", "山田 太郎", "مريم", "build-bot 🤖", "O'Brien & Co."]) {
      const res = await call("/v1/admin/runners", { body: { name } });
      expect(res.status, name).toBe(201);
      expect(res.body.name).toBe(name);
    }
  });

  it("trims surrounding whitespace and refuses a name that is only whitespace", async () => {
    expect((await call("/v1/admin/operators", { body: { name: "  padded  ", role: "viewer" } })).body.name).toBe("padded");
    const blank = await call("/v1/admin/operators", { body: { name: "   ", role: "viewer" } });
    expect(blank.status).toBe(422);
    expect(blank.body.errors[0].path).toBe("name");
  });
});
