import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { getDb } from "../../../src/db/client";
import { defineConfigSection, readSection, unknownKeys, writeSection } from "../../../src/lib/config";
import { CONFIG_SECTIONS } from "../../../src/workers/config-sections";
import { call } from "../../factories";
import { snapshot } from "../../factories/state";

/** A section shaped like the nested ones features will add (objects in objects, arrays of objects). */
const nested = defineConfigSection(
  "nested_probe",
  z.object({
    enabled: z.boolean().default(false),
    limits: z
      .object({ per_hour: z.number().int().default(3), burst: z.object({ size: z.number().int().default(1) }).default({ size: 1 }) })
      .default({ per_hour: 3, burst: { size: 1 } }),
    routes: z.array(z.object({ tag: z.string(), to: z.string() })).default([]),
    labels: z.record(z.string(), z.string()).default({}),
  }),
);

const errorPaths = (body: { errors: { path: string }[] }) => body.errors.map((e) => e.path).sort();

describe("request bodies refuse unknown fields (strict at every depth)", () => {
  it.each([
    ["POST /v1/admin/operators", "/v1/admin/operators", { name: "strict-op", role: "viewer", admin: true }, "admin"],
    ["POST /v1/admin/runners", "/v1/admin/runners", { name: "strict-runner", capacity: 9 }, "capacity"],
    ["POST /v1/admin/clock", "/v1/admin/clock", { advance_ms: 1000, reason: "x" }, "reason"],
    ["POST /v1/admin/jobs", "/v1/admin/jobs", { kind: "utility", runtime: "offline", prompt: "hi", priority: 1 }, "priority"],
  ])("%s answers 422 naming the extra field and creates nothing", async (_name, path, body, extra) => {
    const before = await snapshot();
    const res = await call(path, { body });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe("validation_failed");
    expect(JSON.stringify(res.body.errors)).toContain(extra);
    expect(await snapshot()).toEqual(before);
  });

  it("PUT /v1/config/runner refuses an unknown top-level key and stores nothing", async () => {
    const before = await snapshot();
    const res = await call("/v1/config/runner", { method: "PUT", body: { max_attempts: 2, max_attempt: 5 } });
    expect(res.status).toBe(422);
    expect(JSON.stringify(res.body.errors)).toContain("max_attempt");
    expect(await snapshot()).toEqual(before);
  });

  it("a config PUT refuses unknown keys in nested objects and in objects inside arrays, naming each path", async () => {
    const sections = CONFIG_SECTIONS as Map<string, unknown>;
    sections.set(nested.name, nested);
    try {
      const before = await snapshot();
      const res = await call(`/v1/config/${nested.name}`, {
        method: "PUT",
        body: {
          enabled: true,
          limits: { per_hour: 5, per_day: 9, burst: { size: 2, colour: "red" } },
          routes: [
            { tag: "a", to: "b" },
            { tag: "c", to: "d", via: "e" },
          ],
          labels: { anything: "goes" },
        },
      });
      expect(res.status).toBe(422);
      expect(errorPaths(res.body)).toEqual(["limits.burst.colour", "limits.per_day", "routes.1.via"]);
      expect(await snapshot()).toEqual(before);

      const ok = await call(`/v1/config/${nested.name}`, {
        method: "PUT",
        body: { limits: { per_hour: 5 }, routes: [{ tag: "a", to: "b" }], labels: { anything: "goes" } },
      });
      expect(ok.status).toBe(200);
      expect(ok.body).toEqual({
        enabled: false,
        limits: { per_hour: 5, burst: { size: 1 } },
        routes: [{ tag: "a", to: "b" }],
        labels: { anything: "goes" },
      });
    } finally {
      sections.delete(nested.name);
    }
  });

  it("writeSection itself refuses a nested unknown key (whoever calls it) and keeps the stored value", async () => {
    const db = getDb(env.DB);
    await writeSection(db, nested, { enabled: true }, "test", new Date());
    await expect(writeSection(db, nested, { limits: { burst: { size: 1, extra: 1 } } }, "test", new Date())).rejects.toMatchObject({
      code: "validation_failed",
      errors: [{ path: "limits.burst.extra" }],
    });
    expect((await readSection(db, nested)).enabled).toBe(true);
  });

  it("unknownKeys reports a __proto__ key sent in JSON and leaves records alone", () => {
    const input = JSON.parse('{"a":{"__proto__":{"x":1}},"r":{"k":"v"}}');
    expect(unknownKeys(input, { a: {}, r: { k: "v" } })).toEqual([{ path: "a.__proto__", message: 'Unrecognized key: "__proto__"' }]);
  });
});
