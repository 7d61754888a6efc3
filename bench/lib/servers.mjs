// Starts the product Worker and the baseline Worker side by side, each under wrangler's
// createTestHarness (workerd with local D1, Durable Objects and Queues), as in the e2e tests.
import { fileURLToPath } from "node:url";
import { createTestHarness } from "wrangler";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const ADMIN_TOKEN = "bench-admin-token";

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
