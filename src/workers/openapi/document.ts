import type { Hono } from "hono";
import { generateSpecs } from "hono-openapi";
import type { ErrorCode } from "../../lib/errors";
import { codesByStatus, problemDescription, problemSchema } from "./problem";
import { jsonSchemaOf } from "./json-schema";
import { API_TAGS, tagOfPath } from "./tags";

type Operation = Record<string, unknown> & {
  responses?: Record<string, unknown>;
  security?: Record<string, string[]>[];
  requestBody?: unknown;
  description?: string;
  "x-crewplane-errors"?: ErrorCode[];
  "x-crewplane-auth"?: string;
};

/** Every operation can fail unexpectedly; any but a GET can carry a body too large (the body limit runs first, whatever the type). */
function errorsOf(method: string, operation: Operation): Set<ErrorCode> {
  const codes = new Set<ErrorCode>(operation["x-crewplane-errors"] ?? []);
  codes.add("internal_error");
  if (operation.requestBody || method !== "get") codes.add("payload_too_large");
  return codes;
}

/** Whether a response the route declared is an HTML page. */
function isPage(response: unknown): boolean {
  const content = (response as { content?: Record<string, unknown> } | undefined)?.content;
  return content !== undefined && "text/html" in content;
}

/**
 * Folds what the middleware said into plain OpenAPI: the error codes become problem+json responses
 * by status (each narrowed to its codes), the auth rule a sentence of the description, and a console
 * page's missing session its 303 to the login form. An HTML route's errors (a console route, or one
 * that declares a page) are also pages for a browser (`htmlPages`: same status, same code), so they
 * list `text/html` too; a status the route declared itself (a form shown again) keeps its description.
 */
function finishOperation(path: string, method: string, operation: Operation): void {
  const tags = (operation.tags as string[] | undefined) ?? [];
  operation.tags = [tagOfPath(path), ...tags.filter((t) => t !== tagOfPath(path))];
  const responses = (operation.responses ??= {});
  const console = operation.security?.some((s) => "consoleSession" in s);
  const html = console || Object.values(responses).some(isPage);
  for (const [status, codes] of codesByStatus(errorsOf(method, operation))) {
    const declared = (responses[String(status)] as { description?: string } | undefined)?.description;
    responses[String(status)] = {
      description: declared ? `${declared}. ${problemDescription(codes)}` : problemDescription(codes),
      content: {
        "application/problem+json": { schema: jsonSchemaOf(problemSchema(codes), "output") },
        ...(html ? { "text/html": {} } : {}),
      },
    };
  }
  if (console && method === "get") responses["303"] ??= { description: "No live console session: sent to the login form" };
  const auth = operation["x-crewplane-auth"];
  if (auth) operation.description = operation.description ? `${operation.description}\n\n${auth}` : auth;
  // A router-wide requireAuth is merged once per documented handler of a route: keep one of each.
  operation.security = [...new Map((operation.security ?? []).map((s) => [JSON.stringify(s), s])).values()];
  delete operation["x-crewplane-errors"];
}

async function generate(app: Hono<never>): Promise<Record<string, unknown>> {
  const document = await generateSpecs(app as unknown as Hono, {
    documentation: {
      info: {
        title: "crewplane",
        version: "1",
        description:
          "The control plane of a company of AI employees and an open swarm of agent nodes: the AI council and official projects, the human approval broker and topology evolution, Team-as-Agent rounds, the evolution engine, the runner protocol and the EvoMap node protocol (`/a2a`). Every error is `application/problem+json` with a stable `code`.",
      },
      // Relative: the document describes the Worker that serves it, wherever that runs.
      servers: [{ url: "/" }],
      tags: API_TAGS,
      components: {
        securitySchemes: {
          operatorToken: {
            type: "http",
            scheme: "bearer",
            description: "An operator token (viewer < manager < admin), or the bootstrap ADMIN_TOKEN.",
          },
          runnerToken: {
            type: "http",
            scheme: "bearer",
            description: "A runner token (`POST /v1/admin/runners`), held by a local-runner.",
          },
          nodeToken: { type: "http", scheme: "bearer", description: "A swarm node's `node_secret`, returned once by its registration." },
          memberToken: {
            type: "http",
            scheme: "bearer",
            description: "A team member's token, minted for one role turn and carried in its job.",
          },
          consoleSession: {
            type: "apiKey",
            in: "cookie",
            name: "__Host-crewplane-console",
            description: "The web console's session cookie (`/console/login`).",
          },
        },
      },
    },
    defaultValidationErrorResponse: false,
    excludeStaticFile: false,
  });
  const paths = document.paths as Record<string, Record<string, Operation>>;
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(item)) finishOperation(path, method, operation);
  }
  return document;
}

let cached: Promise<Record<string, unknown>> | undefined;

/**
 * The OpenAPI 3.1 document of `app`, generated from the routes' own schemas on first use and kept
 * for the isolate's life (the routes do not change while it runs).
 */
export function openApiDocument(app: Hono<never>): Promise<Record<string, unknown>> {
  cached ??= generate(app).catch((err: unknown) => {
    cached = undefined;
    throw err;
  });
  return cached;
}
