import { describe, expect, it } from "vitest";
import { app } from "../../../src/workers/app";
import { send } from "../../factories/http";

const METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE"]);

/** Every (method, path) the app serves, in OpenAPI's path spelling (`:id` → `{id}`). */
function appOperations(): Set<string> {
  const out = new Set<string>();
  for (const route of app.routes) {
    if (!METHODS.has(route.method)) continue;
    const path = route.path
      .split("/")
      .map((segment) => (segment.startsWith(":") ? `{${segment.slice(1).replace(/\{.*$/, "").replace(/\?$/, "")}}` : segment))
      .join("/");
    out.add(`${route.method.toLowerCase()} ${path}`);
  }
  return out;
}

describe("GET /openapi.json", () => {
  it("lists every route the app serves", async () => {
    const res = await send("/openapi.json", { token: null });
    expect(res.status).toBe(200);
    const documented = new Set<string>();
    for (const [path, item] of Object.entries(res.json.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(item)) documented.add(`${method} ${path}`);
    }
    const missing = [...appOperations()].filter((op) => !documented.has(op));
    console.log(`${appOperations().size} operations`, missing.length);
    expect(missing).toEqual([]);
  });
});
