import { env, exports } from "cloudflare:workers";
import { contractProblem, type OpenApiDocument } from "./contract-check";

let document: Promise<OpenApiDocument> | undefined;

function loadDocument(): Promise<OpenApiDocument> {
  document ??= exports.default.fetch("http://crewplane.test/openapi.json").then((r) => r.json() as Promise<OpenApiDocument>);
  return document;
}

/**
 * Which answers the request factories check against /openapi.json (vitest.config.ts passes the
 * CONTRACT_CHECK environment variable): `on` (every one), `off`, or comma-separated path prefixes.
 */
function enabled(url: string): boolean {
  const setting = (env as { CONTRACT_CHECK?: string }).CONTRACT_CHECK ?? "on";
  if (setting === "on") return true;
  if (setting === "off") return false;
  const { pathname } = new URL(url);
  return setting.split(",").some((prefix) => prefix !== "" && pathname.startsWith(prefix));
}

/**
 * Throws when a response the Worker gave does not conform to its own OpenAPI document (status,
 * media type, JSON schema). Every request factory calls it, so every workers test checks the contract.
 */
export async function expectConforms(method: string, url: string, res: { status: number; headers: Headers; text: string }): Promise<void> {
  if (!enabled(url) || res.headers.get("content-type")?.startsWith("text/event-stream")) return;
  const problem = contractProblem(
    await loadDocument(),
    { method, url },
    { status: res.status, contentType: res.headers.get("content-type"), body: res.text },
  );
  if (problem) throw new Error(`Contract: ${problem}\nbody: ${res.text.slice(0, 600)}`);
}
