import { Validator, type OutputUnit } from "@cfworker/json-schema";

/**
 * Checks a real response against the OpenAPI document the Worker serves: the status must be one the
 * operation documents, the media type one it lists for that status, and a JSON body must match the
 * schema. Shared by the workers tests (through the request factories) and the e2e suite.
 */
export interface OpenApiDocument {
  paths: Record<string, Record<string, { responses?: Record<string, { content?: Record<string, { schema?: object }> }> }>>;
}

interface CompiledPath {
  template: string;
  pattern: RegExp;
  literalLength: number;
}

const compiled = new WeakMap<OpenApiDocument, { paths: CompiledPath[]; validators: Map<string, Validator> }>();

function compile(doc: OpenApiDocument) {
  let entry = compiled.get(doc);
  if (!entry) {
    const paths = Object.keys(doc.paths).map((template) => ({
      template,
      pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}$`),
      literalLength: template.replace(/\{[^}]+\}/g, "").length,
    }));
    // The most literal template wins (`/v1/council/principles` before `/v1/council/{id}`).
    paths.sort((a, b) => b.literalLength - a.literalLength);
    entry = { paths, validators: new Map() };
    compiled.set(doc, entry);
  }
  return entry;
}

/** The document's template for a concrete path and method, or null when no operation matches. */
export function operationTemplate(doc: OpenApiDocument, method: string, pathname: string): string | null {
  const m = method.toLowerCase();
  for (const p of compile(doc).paths) if (p.pattern.test(pathname) && doc.paths[p.template]?.[m]) return p.template;
  return null;
}

function describeErrors(errors: OutputUnit[]): string {
  return errors
    .slice(0, 6)
    .map((e) => `${e.instanceLocation}: ${e.error}`)
    .join("; ");
}

/** What is wrong with this response under the document, or null when it conforms. */
export function contractProblem(
  doc: OpenApiDocument,
  req: { method: string; url: string },
  res: { status: number; contentType: string | null; body: string },
): string | null {
  const { pathname } = new URL(req.url, "http://x");
  const method = req.method.toLowerCase();
  const template = operationTemplate(doc, method, pathname);
  const where = `${req.method.toUpperCase()} ${pathname} → ${res.status}`;
  // 405 + Allow is the router's answer to a method no route of the path serves, on every path.
  if (res.status === 405) return null;
  // 404 and 405 for paths and methods no operation serves come from the router itself.
  if (!template) return res.status === 404 || res.status === 405 ? null : `${where}: no operation in the document`;
  const operation = doc.paths[template]![method]!;
  const response = operation.responses?.[String(res.status)];
  if (!response)
    return `${where}: status not documented for ${method} ${template} (documented: ${Object.keys(operation.responses ?? {}).join(", ")})`;
  const content = response.content;
  if (!content) return null;
  const media = (res.contentType ?? "").split(";")[0]!.trim().toLowerCase();
  const entry = content[media];
  if (!entry) {
    if (res.body === "" && res.status === 304) return null;
    return `${where}: media type ${media || "(none)"} not documented (documented: ${Object.keys(content).join(", ")})`;
  }
  if (!entry.schema || !(media === "application/json" || media.endsWith("+json"))) return null;
  let value: unknown;
  try {
    value = JSON.parse(res.body);
  } catch {
    return `${where}: body is not JSON`;
  }
  const key = `${method} ${template} ${res.status} ${media}`;
  const { validators } = compile(doc);
  let validator = validators.get(key);
  if (!validator) {
    validator = new Validator(entry.schema as never, "2020-12", false);
    validators.set(key, validator);
  }
  const result = validator.validate(value);
  return result.valid ? null : `${where}: body does not match the documented schema: ${describeErrors(result.errors)}`;
}
