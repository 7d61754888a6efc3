import { exports } from "cloudflare:workers";
import { expectConforms } from "./contract";

export const ORIGIN = "http://crewplane.test";

export interface WebResponse {
  status: number;
  headers: Headers;
  text: string;
}

/** One browser-like request through the real Worker: a cookie, a form body, the page's Origin. */
export async function web(
  path: string,
  opts: { method?: string; cookie?: string; form?: Record<string, string>; headers?: Record<string, string>; origin?: string | null } = {},
): Promise<WebResponse> {
  const headers: Record<string, string> = { accept: "text/html", ...(opts.headers ?? {}) };
  if (opts.cookie) headers.cookie = opts.cookie;
  let body: string | undefined;
  if (opts.form) {
    headers["content-type"] = "application/x-www-form-urlencoded";
    body = new URLSearchParams(opts.form).toString();
    if (opts.origin !== null) headers.origin = opts.origin ?? ORIGIN;
  }
  const res = await exports.default.fetch(`${ORIGIN}${path}`, {
    method: opts.method ?? (body ? "POST" : "GET"),
    headers,
    body,
    redirect: "manual",
  });
  const text = await res.text();
  await expectConforms(opts.method ?? (body ? "POST" : "GET"), `${ORIGIN}${path}`, { status: res.status, headers: res.headers, text });
  return { status: res.status, headers: res.headers, text };
}

/** Logs in at the form; returns the `Cookie` header value the browser would send afterwards. */
export async function login(token: string): Promise<{ cookie: string; setCookie: string; csrf: string }> {
  const res = await web("/console/login", { form: { token, next: "/console" } });
  if (res.status !== 303) throw new Error(`login: ${res.status} ${res.text.slice(0, 500)}`);
  const setCookie = res.headers.get("set-cookie") ?? "";
  const cookie = setCookie.split(";")[0]!;
  return { cookie, setCookie, csrf: await csrfOf(cookie) };
}

/** The form token a console page hands this session. */
export async function csrfOf(cookie: string): Promise<string> {
  const page = await web("/console/config", { cookie });
  const match = /name="_csrf" value="([0-9a-f]{64})"/.exec(page.text);
  if (!match) throw new Error(`no form token on the page (${page.status})`);
  return match[1]!;
}

const unescapeHtml = (s: string) =>
  s.replace(/&(lt|gt|quot|#39|amp);/g, (_, e: string) => ({ lt: "<", gt: ">", quot: '"', "#39": "'", amp: "&" })[e]!);
const attr = (tag: string, name: string) => {
  const m = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
  return m ? unescapeHtml(m[1]!) : undefined;
};

/**
 * What a browser would post for the form with this id, as the page drew it: inputs by value,
 * checkboxes only when checked, a select's selected option (else its first), a textarea's text.
 */
export function formOf(html: string, formId: string): Record<string, string> {
  const start = html.indexOf(`id="${formId}"`);
  if (start < 0) throw new Error(`no form ${formId} on the page`);
  const body = html.slice(start, html.indexOf("</form>", start));
  const out: Record<string, string> = {};
  for (const m of body.matchAll(/<input\b[^>]*>/g)) {
    const tag = m[0];
    const name = attr(tag, "name");
    if (!name) continue;
    if (attr(tag, "type") === "checkbox") {
      if (/\schecked\b/.test(tag)) out[name] = attr(tag, "value") ?? "on";
    } else out[name] = attr(tag, "value") ?? "";
  }
  for (const m of body.matchAll(/<select\b([^>]*)>(.*?)<\/select>/gs)) {
    const name = attr(m[1]!, "name");
    if (!name) continue;
    const options = [...m[2]!.matchAll(/<option\b([^>]*)>/g)].map((o) => o[1]!);
    const chosen = options.find((o) => /\sselected\b/.test(o)) ?? options[0];
    out[name] = chosen ? (attr(chosen, "value") ?? "") : "";
  }
  for (const m of body.matchAll(/<textarea\b([^>]*)>(.*?)<\/textarea>/gs)) {
    const name = attr(m[1]!, "name");
    if (name) out[name] = unescapeHtml(m[2]!);
  }
  return out;
}
