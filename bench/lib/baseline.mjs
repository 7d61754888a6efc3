// The baseline Worker's routes (bench/baseline/src/index.ts): each does one platform thing.
import { drive, driveRaw, round, summarize, warm } from "./load.mjs";
import { cpuMs, workerdServing } from "./workerd-cpu.mjs";
import { startPerf } from "./perf-record.mjs";

export const BASELINES = {
  nothing: { method: "GET", path: "/nothing", label: "nothing" },
  d1Read: { method: "GET", path: "/d1-read", label: "one D1 read by primary key" },
  d1ReadPost: { method: "POST", path: "/d1-read", label: "POST + one D1 read by primary key" },
  d1Insert: { method: "POST", path: "/d1-insert", label: "one D1 insert" },
  doRpc: { method: "POST", path: "/do-rpc", label: "one DO RPC" },
  doRpcD1Insert: { method: "POST", path: "/do-rpc-d1-insert", label: "DO RPC + D1 insert" },
  queueD1Insert: { method: "POST", path: "/queue-d1-insert", label: "Queue send + D1 insert" },
};

export async function driveBaseline(baselineUrl, route, { connections, duration }) {
  const init = { method: route.method, headers: { "content-type": "application/json" }, body: route.method === "POST" ? "{}" : undefined };
  await warm(`${baselineUrl}${route.path}`, init);
  return drive({ url: `${baselineUrl}${route.path}`, connections, duration, method: route.method, body: init.body });
}

/**
 * Measures a product path and its baseline route in alternating slices (baseline, product, product,
 * baseline, …) so a change in machine load during the run weighs on both alike; each side's slices
 * are merged into one result.
 */
export async function compare(baselineUrl, route, product, { connections, duration, rounds }) {
  const baseInit = {
    method: route.method,
    headers: { "content-type": "application/json" },
    body: route.method === "POST" ? "{}" : undefined,
  };
  await warm(`${baselineUrl}${route.path}`, baseInit);
  const slice = duration / rounds;
  const baseOpts = { url: `${baselineUrl}${route.path}`, connections, duration: slice, method: route.method, body: baseInit.body };
  const prodOpts = { ...product, connections, duration: slice };
  const raw = { base: [], prod: [] };
  // Each server's CPU over the whole run (its slices and the other side's): what its requests left
  // running after a slice ended (waitUntil, alarms, queue consumers) is still theirs.
  // The runtime process is found through the proxy's open connections to it, which close when the
  // proxy has been idle (a benchmark that waits between measurements): one request opens them again.
  await warm(`${product.url}/v1/health`, { method: "GET" }, 2);
  const pids = { base: workerdServing(baselineUrl), prod: workerdServing(product.url) };
  const cpu0 = { base: cpuMs(pids.base), prod: cpuMs(pids.prod) };
  const stopPerf = startPerf(route.label, pids);
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? ["base", "prod"] : ["prod", "base"];
    for (const side of order) raw[side].push(await driveRaw(side === "base" ? baseOpts : prodOpts));
  }
  await stopPerf();
  const prod = summarize(raw.prod, prodOpts);
  const base = summarize(raw.base, baseOpts);
  const perRequest = (side, stats) => {
    const used = cpuMs(pids[side]);
    return used === null || cpu0[side] === null || stats.requests === 0 ? null : round((used - cpu0[side]) / stats.requests, 2);
  };
  // Each round's product rate over the baseline rate of the same round: how far one run's ratio can
  // move with the machine's load within it (a shared 2-core host), shown beside the merged ratio.
  const rate = (r) => (r.duration > 0 ? r["2xx"] / r.duration : 0);
  const sliceRatios = raw.prod.map((p, i) => (rate(raw.base[i]) > 0 ? round(rate(p) / rate(raw.base[i]), 2) : null));
  return {
    product: { ...prod, cpu_ms_per_request: perRequest("prod", prod), slice_ratios: sliceRatios },
    baseline: { label: route.label, ...base, cpu_ms_per_request: perRequest("base", base) },
  };
}
