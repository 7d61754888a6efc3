import { describe, expect, it } from "vitest";
import { CONFIG_SECTIONS } from "../../../src/workers/config-sections";
import { TICKS, ticksFor } from "../../../src/workers/cron/ticks";
import { call } from "../../factories";
import { snapshot } from "../../factories/state";

// Names every plain object inherits: a lookup by a user-supplied name must never land on them.
const PROTOTYPE_NAMES = ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf", "isPrototypeOf", "__defineGetter__"];

describe("lookups by user-supplied names never reach object prototypes", () => {
  it.each(PROTOTYPE_NAMES)("GET /v1/config/%s is a clean 404 listing the sections", async (name) => {
    const res = await call(`/v1/config/${name}`);
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(res.body).toMatchObject({ code: "not_found", sections: [...CONFIG_SECTIONS.keys()].sort() });
  });

  it.each(PROTOTYPE_NAMES)("PUT /v1/config/%s is a clean 404 that stores nothing", async (name) => {
    const before = await snapshot();
    const res = await call(`/v1/config/${name}`, { method: "PUT", body: {} });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe("not_found");
    expect(await snapshot()).toEqual(before);
  });

  it.each(PROTOTYPE_NAMES)("POST /v1/admin/ticks/%s runs nothing and answers a 4xx problem", async (name) => {
    const before = await snapshot();
    const res = await call(`/v1/admin/ticks/${name}`, { method: "POST" });
    expect([404, 422]).toContain(res.status);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(await snapshot()).toEqual(before);
  });

  it("keeps the registries as Maps, so a name is looked up only among its own entries", () => {
    expect(CONFIG_SECTIONS).toBeInstanceOf(Map);
    expect(TICKS).toBeInstanceOf(Map);
    for (const name of PROTOTYPE_NAMES) {
      expect(CONFIG_SECTIONS.get(name)).toBeUndefined();
      expect(TICKS.get(name as never)).toBeUndefined();
    }
    expect(ticksFor("constructor")).toEqual([]);
    expect(ticksFor("* * * * *").map(([name]) => name)).toContain("leases");
  });
});
