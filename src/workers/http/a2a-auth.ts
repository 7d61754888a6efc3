import type { MiddlewareHandler } from "hono";
import { getDb } from "../../db/client";
import { bearerToken } from "../../lib/auth";
import { AppError } from "../../lib/errors";
import { authenticateA2a, authProblem, namedNode, refuseSuspended } from "../../a2a/auth";
import type { AppEnv } from "../app-env";
import { withOperationSpec } from "../openapi/describe";
import { readJson } from "./a2a-body";

const NODE_SECRET =
  "a node's secret: the 64-hex `node_secret` hello gave (looked up by the node the request names in `node_id` or `sender_id`), or the node's whole `/v1` token";

/**
 * `requireAuth({ node: true })` for the EvoMap facade: the bearer is the node's secret (64 hex, looked
 * up by the node the request names in its query or body) or crewplane's whole node token. Sets
 * `principal`. A suspended node is refused (`403`, `reason: node_suspended`) unless `allowSuspended`.
 */
export function requireA2aNode(opts: { allowSuspended?: boolean } = {}): MiddlewareHandler<AppEnv> {
  return withOperationSpec<MiddlewareHandler<AppEnv>>(
    async function requireA2aNode(c, next) {
      const token = bearerToken(c.req.header("authorization"));
      if (!token) throw new AppError("unauthorized", "A bearer token is required: the node_secret hello gave");
      // The body is read here to find the node it names; Hono caches it for the handler.
      const body = c.req.method === "GET" || c.req.method === "HEAD" ? undefined : await readJson(c);
      const auth = await authenticateA2a(c.env, getDb(c.env.DB), token, namedNode(body, c.req.query("node_id")), c.var.clock.now());
      if (!auth.ok) throw authProblem(auth.reason);
      if (!opts.allowSuspended) refuseSuspended(auth.node);
      c.set("principal", auth.principal);
      await next();
    },
    () => ({
      security: [{ nodeToken: [] }],
      "x-crewplane-auth": `Needs ${NODE_SECRET}.${opts.allowSuspended ? " A suspended node may call it." : " A suspended node is refused (`403`, `reason: node_suspended`)."}`,
      "x-crewplane-errors": ["unauthorized", "forbidden"],
    }),
  );
}

/**
 * The documentation of a facade route that authenticates inside its handler, where a node's secret
 * is optional (anonymous `fetch`; `hello` and `heartbeat` for a node not yet registered). Does
 * nothing at request time.
 */
export function a2aOptionalNodeDoc(when: string): MiddlewareHandler {
  return withOperationSpec<MiddlewareHandler>(
    async function a2aOptionalNode(_c, next) {
      await next();
    },
    () => ({
      security: [{}, { nodeToken: [] }],
      "x-crewplane-auth": `Takes ${NODE_SECRET}, ${when}.`,
      "x-crewplane-errors": ["unauthorized", "forbidden"],
    }),
  );
}
