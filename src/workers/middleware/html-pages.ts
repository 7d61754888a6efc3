import type { Context, MiddlewareHandler } from "hono";
import { renderErrorPage } from "../http/html";

/**
 * The pages' Content-Security-Policy: scripts, styles, images and connections from this origin only,
 * nothing inline, no eval, no framing, forms post only here. htmx and the chart library are served
 * from `/assets/` by the Worker (no CDN), and read their settings from markup, not inline script.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

function wantsHtml(c: Context): boolean {
  return c.req.header("hx-request") === "true" || (c.req.header("accept") ?? "").includes("text/html") || c.req.method === "POST";
}

/**
 * For every HTML route: the security headers, and errors as a page. The root `onError` renders
 * every thrown error as problem+json (the one mapping, STYLE rule 2); here, for a browser, that
 * answer is replaced by an HTML page with the same status and the same stable `code`. A request
 * that asks for JSON keeps the problem+json.
 */
export function htmlPages(): MiddlewareHandler {
  return async function htmlPages(c, next) {
    await next();
    if (c.error && wantsHtml(c) && (c.res.headers.get("content-type") ?? "").startsWith("application/problem+json")) {
      const problem = (await c.res.clone().json()) as { status: number; code: string; detail: string; title: string };
      const res = renderErrorPage(c, problem);
      c.res = undefined;
      c.res = res;
    }
    c.res.headers.set("Content-Security-Policy", PAGE_CSP);
    c.res.headers.set("X-Content-Type-Options", "nosniff");
    c.res.headers.set("Referrer-Policy", "same-origin");
    c.res.headers.set("X-Frame-Options", "DENY");
    if ((c.res.headers.get("content-type") ?? "").startsWith("text/html")) c.res.headers.set("Cache-Control", "no-store");
  };
}
