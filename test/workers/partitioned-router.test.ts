import type { Result } from "hono/router";
import { TrieRouter } from "hono/router/trie-router";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { app } from "../../src/workers/app";
import { PartitionedRouter } from "../../src/workers/partitioned-router";

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/** A value for a path parameter that its pattern accepts (ids with a prefix, digits, a plain word). */
function sampleParam(segment: string): string {
  const pattern = /^:[^{]+\{(.+)\}\??$/.exec(segment)?.[1];
  if (!pattern) return "abc";
  const candidates = ["abc", "123", ...["delib", "proj", "task", "emp", "node"].map((p) => `${p}_0123456789abcdef`)];
  const found = candidates.find((c) => new RegExp(`^(?:${pattern})$`).test(c));
  if (!found) throw new Error(`no sample for ${segment}`);
  return found;
}

/** Request paths a route answers, plus a neighbour or two that it must not confuse. */
function samplePaths(pattern: string): string[] {
  if (pattern === "*" || pattern === "/*") return ["/", "/x"];
  const filled = pattern
    .split("/")
    .map((s) => (s === "*" ? "x/y" : s.startsWith(":") ? sampleParam(s) : s))
    .join("/");
  return [filled, `${filled}/`, `${filled}/extra`, filled.replace(/\/[^/]*$/, "/new")];
}

/** Matches as route indexes with their parameters, whichever router answered (both result shapes). */
function normalize([matches, stash]: Result<number>) {
  return matches.map(([route, params]) => [
    route,
    Object.fromEntries(Object.entries(params).map(([key, value]) => [key, stash ? stash[value as number] : value])),
  ]);
}

describe("PartitionedRouter", () => {
  const routes = app.routes.map((r, i) => ({ method: r.method, path: r.path, index: i }));
  const partitioned = new PartitionedRouter<number>();
  const trie = new TrieRouter<number>();
  for (const r of routes) {
    partitioned.add(r.method, r.path, r.index);
    trie.add(r.method, r.path, r.index);
  }

  it("answers every path of the app exactly as one router over every route does", () => {
    const paths = new Set<string>([
      "/",
      "/v1",
      "/v1/",
      "//",
      "/v1//nodes",
      "/nowhere/at/all",
      "/a2a/council/history",
      "/a2a/council/term/current",
    ]);
    for (const r of routes) for (const p of samplePaths(r.path)) paths.add(p);
    // Paths where a literal segment and a parameter are siblings, the reason the app had fallen back to the trie.
    for (const p of [
      "/console/employees/new",
      "/console/employees/new/edit",
      "/v1/employees/abc/playbook/rounds/retire",
      "/v1/employees/abc/playbook/migrate-soul",
    ])
      paths.add(p);
    let compared = 0;
    for (const path of paths)
      for (const method of METHODS) {
        expect(normalize(partitioned.match(method, path)), `${method} ${path}`).toEqual(normalize(trie.match(method, path)));
        compared++;
      }
    expect(compared).toBe(paths.size * METHODS.length);
    expect(paths.size).toBeGreaterThan(2 * new Set(routes.map((r) => r.path)).size);
  });

  it("keeps the RegExpRouter for the hot paths (the trie only where siblings need it)", () => {
    for (const path of [
      "/v1/nodes/node_1/heartbeat",
      "/v1/council/sessions/delib_1/dialog",
      "/v1/admin/jobs",
      "/v1/runner/lease",
      "/v1/runner/jobs/job_1/complete",
    ])
      expect(partitioned.routerFor(path), path).toBe("SmartRouter + RegExpRouter");
    expect(partitioned.routerFor("/console/employees/new")).toBe("SmartRouter + TrieRouter");
  });

  it("serves the app through it", async () => {
    expect(app.router).toBeInstanceOf(PartitionedRouter);
    const res = await app.request("/v1/health", {}, env);
    expect(res.status).toBe(200);
  });
});
