import type { Context } from "hono";
import type { Child } from "hono/jsx";
import { AppError } from "../../lib/errors";
import type { FormProblem } from "../../web/components/common";
import { ErrorPage, type PageProblem } from "../../web/pages/error";

/**
 * An HTML page (`<!doctype html>` + the rendered tree). The body carries the server's now
 * (`data-now`, the test clock's outside production), so countdowns count against the server's time.
 */
export function page(c: Context, node: Child, status: 200 | 201 | 401 | 403 | 404 | 409 | 410 | 422 | 429 = 200): Response {
  const clock = c.get("clock") as { now(): Date } | undefined;
  const html = String(node).replace("<body", `<body data-now="${(clock?.now() ?? new Date()).toISOString()}"`);
  return c.html(`<!doctype html>${html}`, status);
}

/**
 * An error as a page with its status and stable code. For an htmx request the problem goes into
 * the page's status region (`#flash`) instead of the element that asked.
 */
export function renderErrorPage(c: Context, problem: PageProblem): Response {
  const path = new URL(c.req.url).pathname;
  const area = path.startsWith("/console") ? "console" : "public";
  const res = c.html(`<!doctype html>${String(ErrorPage({ problem, area, path }))}`, problem.status as 400);
  if (c.req.header("hx-request") === "true") {
    res.headers.set("HX-Retarget", "#flash");
    res.headers.set("HX-Reswap", "innerHTML");
    res.headers.set("HX-Reselect", ".problem");
  }
  return res;
}

/** A refused form, for showing inline: its code, detail, and messages by field path. */
export function formProblem(err: unknown): FormProblem | null {
  if (!(err instanceof AppError)) return null;
  const fields: Record<string, string[]> = {};
  for (const e of err.errors ?? []) (fields[e.path] ??= []).push(e.message);
  return { code: err.code, detail: err.detail, fields };
}

/**
 * The refusal a form shows inline, with its draft; anything else is thrown on to the error page (a
 * crash, a 5xx, a resource that is not there).
 */
export function refusalOf(err: unknown): AppError {
  if (err instanceof AppError && err.status < 500 && err.code !== "not_found") return err;
  throw err;
}

/** The status a refused form is answered with: the error's own (422 validation, 409 conflict, …). */
export function problemStatus(err: AppError): 403 | 404 | 409 | 422 | 429 {
  const s = err.status;
  return s === 403 || s === 404 || s === 409 || s === 429 ? s : 422;
}

/** The fields of a posted form (url-encoded or multipart), text values only. */
export async function readForm(c: Context): Promise<Record<string, string>> {
  const body = await c.req.parseBody();
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(body)) if (typeof v === "string") out[k] = v;
  return out;
}
