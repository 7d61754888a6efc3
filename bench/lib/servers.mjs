// Starts the product Worker and the baseline Worker side by side, each under wrangler's
// createTestHarness (workerd with local D1, Durable Objects and Queues), as in the e2e tests.
import { fileURLToPath } from "node:url";
import { createTestHarness } from "wrangler";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const ADMIN_TOKEN = "bench-admin-token";

/**
 * wrangler's local observability (on by default) stores every span of every request, with its
 * attributes (a D1 span carries the statement's whole SQL text), in a SQLite Durable Object inside
 * the same workerd, on the same thread as the Workers it traces. It charges each path by the bytes
 * of SQL it sends and the spans it opens, a cost of the development tool that production's
 * off-box tracing does not put on a request. Both servers run without it, so the ratios compare
 * our code with the platform's; `X_LOCAL_OBSERVABILITY=true npm run bench` measures with it.
 */
process.env.X_LOCAL_OBSERVABILITY ??= "false";

export async function startServers() {
  const productServer = createTestHarness({
    root: ROOT,
    workers: [{ configPath: "./wrangler.toml", vars: { ENVIRONMENT: "development" }, secrets: { ADMIN_TOKEN } }],
  });
  const baselineServer = createTestHarness({ root: `${ROOT}/bench/baseline`, workers: [{ configPath: "./wrangler.toml" }] });
  const [p, b] = await Promise.all([productServer.listen(), baselineServer.listen()]);
  await Promise.all([productServer.getWorker().applyD1Migrations("DB"), baselineServer.getWorker().applyD1Migrations("DB")]);
  const product = productApi(p.url.toString().replace(/\/$/, ""), productServer);
  const baseline = { url: b.url.toString().replace(/\/$/, ""), server: baselineServer };
  return {
    product,
    baseline,
    close: () => Promise.allSettled([productServer.close(), baselineServer.close()]),
  };
}

function productApi(url, server) {
  async function api(path, { method, body, token = ADMIN_TOKEN } = {}) {
    const res = await fetch(`${url}${path}`, {
      method: method ?? (body === undefined ? "GET" : "POST"),
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }
  let env;
  return {
    url,
    server,
    api,
    /** The product's bindings, from Node (D1 queries for the end-of-run checks). */
    env: async () => (env ??= await server.getWorker().getEnv()),
    /** SQL inside the RunnerInbox that holds the `offline` jobs the runner benchmarks submit (its pool, issue 26). */
    inboxSql: (query, ...params) => inboxSqlIn("pool:offline", query, ...params),
    /** SQL inside any RunnerInbox by name (`pool:<runtime>`, `fleet`; seeding and inspection only). */
    inboxSqlIn,
  };
  async function inboxSqlIn(name, query, ...params) {
    const storage = await server.getWorker().getDurableObjectStorage("RUNNER_INBOX", { name });
    return storage.exec(query, ...params);
  }
}
