import type { Result, Router } from "hono/router";
import { RegExpRouter } from "hono/router/reg-exp-router";
import { SmartRouter } from "hono/router/smart-router";
import { TrieRouter } from "hono/router/trie-router";

/**
 * Hono's default router, one per resource: the routes are split by the first two segments of their
 * path (`/v1/nodes`, `/a2a/council`, `/console/employees`), and each part gets its own SmartRouter.
 *
 * Why: Hono's RegExpRouter (one regular expression, answers from precomputed tables) refuses a route
 * set in which a literal segment and a parameter are siblings (`/console/employees/new` beside
 * `/console/employees/:id`), and then SmartRouter falls back to the TrieRouter for every route of
 * the app. The trie walks and allocates on every request: under heartbeat load its search was 3 % of
 * the isolate's CPU and a fifth of what it allocated (issue 41). Split by resource, only the parts
 * that hold such siblings use the trie; the hot paths get the RegExpRouter.
 *
 * A part holds every route that can match a path with its two segments, in the order they were
 * added (middleware on `*` included), so it answers exactly what one router over all routes would.
 * A path whose first two segments name no part goes to one router over every route.
 */
export class PartitionedRouter<T> implements Router<T> {
  name = "PartitionedRouter";
  #routes: [string, string, T][] | undefined = [];
  #parts = new Map<string, Router<T>>();
  #all: Router<T> | undefined;

  add(method: string, path: string, handler: T): void {
    if (!this.#routes) throw new Error("PartitionedRouter: a route was added after the first request was matched");
    this.#routes.push([method, path, handler]);
  }

  match(method: string, path: string): Result<T> {
    return this.#partFor(path).match(method, path);
  }

  /** Which router answers for a path (tests: the hot paths must not fall back to the trie). */
  routerFor(path: string): string {
    const router = this.#partFor(path);
    // SmartRouter settles on a router at its first match; an empty match settles it.
    router.match("GET", path);
    return router.name;
  }

  #partFor(path: string): Router<T> {
    if (this.#routes) this.#build(this.#routes);
    const key = partKey(path);
    return (key !== null && this.#parts.get(key)) || this.#all!;
  }

  #build(routes: [string, string, T][]): void {
    this.#routes = undefined;
    const keys = new Set<string>();
    for (const [, path] of routes) {
      const [first, second] = segments(path);
      if (first !== undefined && second !== undefined && isLiteral(first) && isLiteral(second)) keys.add(`/${first}/${second}`);
    }
    for (const key of keys) {
      const [first, second] = segments(key) as [string, string];
      const router = smartRouter<T>();
      for (const route of routes) if (mayMatchPart(route[1], first, second)) router.add(...route);
      this.#parts.set(key, router);
    }
    const all = smartRouter<T>();
    for (const route of routes) all.add(...route);
    this.#all = all;
  }
}

function smartRouter<T>(): Router<T> {
  return new SmartRouter<T>({ routers: [new RegExpRouter<T>(), new TrieRouter<T>()] });
}

/** `/v1/nodes` for `/v1/nodes/abc/heartbeat` and `/v1/nodes`; null for a path of fewer segments. */
function partKey(path: string): string | null {
  const second = path.indexOf("/", 1);
  if (second < 0 || second === path.length - 1) return null;
  const third = path.indexOf("/", second + 1);
  return third < 0 ? path : path.slice(0, third);
}

function segments(path: string): string[] {
  return path.split("/").slice(1);
}

/**
 * A segment that matches only itself: no parameter, wildcard, optional mark, or piece of a
 * parameter's pattern (a pattern with a `/` in it splits across segments).
 */
function isLiteral(segment: string): boolean {
  return !/[:*?{}]/.test(segment);
}

/**
 * Whether a route's path may match some request path whose first two segments are `first` and
 * `second`. It may answer yes when the route cannot (the part's own router still decides); it must
 * never answer no when the route can.
 */
function mayMatchPart(pattern: string, first: string, second: string): boolean {
  if (pattern === "*" || pattern === "/*") return true;
  const parts = segments(pattern);
  const wanted = [first, second];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    // A wildcard or an optional parameter can stand for the rest, however many segments it has.
    if (part.includes("*") || part.includes("?")) return true;
    if (i >= 2) return true;
    if (isLiteral(part) && part !== wanted[i]) return false;
  }
  // Without a wildcard, a route of fewer than two segments matches no path of two or more.
  return parts.length >= 2;
}
