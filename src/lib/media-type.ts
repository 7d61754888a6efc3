/**
 * Which Content-Type a JSON body may arrive with: `application/json` or a `+json` structured
 * suffix (`application/merge-patch+json`), case-insensitive, with any parameters, but a charset,
 * when given, must be UTF-8 (RFC 8259 §8.1: JSON exchanged between systems is UTF-8).
 *
 * The essence pattern is the one Hono's validator parses with, so whatever passes here is parsed.
 * Anything else is refused instead of being read as `{}`: Hono's json validator yields an empty
 * object for a non-JSON type, which would let a form-encoded PUT reset a config section.
 */
const JSON_ESSENCE = /^application\/([\w.-]+\+)?json$/i;

/** Why the Content-Type cannot carry a JSON body, or null when it can. */
export function jsonContentTypeProblem(contentType: string | undefined): string | null {
  if (!contentType?.trim()) return "the request has no Content-Type";
  const [essence = "", ...params] = contentType.split(";");
  if (!JSON_ESSENCE.test(essence.trim())) return `the Content-Type is ${essence.trim().slice(0, 100)}`;
  for (const param of params) {
    const eq = param.indexOf("=");
    if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== "charset") continue;
    const charset = param
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, "$1")
      .toLowerCase();
    if (charset !== "utf-8" && charset !== "utf8") return `the charset is ${charset.slice(0, 40)}, not utf-8`;
  }
  return null;
}
