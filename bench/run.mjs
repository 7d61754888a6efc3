// The benchmark harness: `npm run bench` runs every benchmark in BENCHMARKS, `npm run bench -- <name>`
// one of them. The product Worker and the baseline Worker run side by side under wrangler; each
// product path is driven by the same load generator at the same concurrency as its baseline route.
// `--smoke` runs each measurement for 2 s and writes nothing: `npm test` uses it so a broken
// benchmark fails CI. Options: --duration <s> (default 10), --connections <n> (default 8).
import { parseArgs } from "node:util";
import { BENCHMARKS } from "./benchmarks.mjs";
import { BASELINES, compare, driveBaseline } from "./lib/baseline.mjs";
import { commit, machine, readmeBlock, table, updateReadme, withRatios, writeResults } from "./lib/report.mjs";
import { startServers } from "./lib/servers.mjs";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { smoke: { type: "boolean", default: false }, duration: { type: "string" }, connections: { type: "string", default: "8" } },
});
const options = {
  smoke: values.smoke,
  duration: Number(values.duration ?? (values.smoke ? 2 : 10)),
  connections: Number(values.connections),
};
const unknown = positionals.filter((n) => !BENCHMARKS.some((b) => b.name === n));
if (unknown.length > 0) {
  console.error(`unknown benchmark(s): ${unknown.join(", ")}; known: ${BENCHMARKS.map((b) => b.name).join(", ")}`);
  process.exit(2);
}
const selected = positionals.length > 0 ? BENCHMARKS.filter((b) => positionals.includes(b.name)) : BENCHMARKS;
const args = process.argv.slice(2);
const command = args.length > 0 ? `npm run bench -- ${args.join(" ")}` : "npm run bench";

const servers = await startServers();
let failed = false;
try {
  for (const bench of selected) {
    const before = machine();
    const log = (...args) => console.error(`[${bench.name}]`, ...args);
    log(`running (${options.smoke ? "smoke, " : ""}${options.duration} s per measurement, ${options.connections} connections)`);
    const ctx = {
      ...servers,
      options,
      log,
      /** One baseline route alone (e.g. to size a run before the measured comparison). */
      baselineRoute: (key, { connections = options.connections, duration = options.duration } = {}) =>
        driveBaseline(servers.baseline.url, BASELINES[key], { connections, duration }).then((stats) => ({
          label: BASELINES[key].label,
          ...stats,
        })),
      /** A product path against a baseline route, in alternating slices adding up to the duration. */
      compare: (key, product, connections = options.connections) =>
        compare(servers.baseline.url, BASELINES[key], product, { connections, duration: options.duration, rounds: options.smoke ? 1 : 4 }),
    };
    const outcome = await bench.run(ctx);
    const rows = withRatios(outcome.rows);
    const after = machine();
    const record = {
      name: bench.name,
      date: new Date().toISOString().slice(0, 16).replace("T", " ") + " UTC",
      commit: commit(),
      machine: { ...before, loadavg_1m_after: after.loadavg_1m },
      options,
      rows,
      checks: outcome.checks,
      notes: outcome.notes ?? [],
      table: table(rows),
    };
    console.log(`\n## ${bench.name}${options.smoke ? " (smoke)" : ""}\n\n${record.table}\n`);
    for (const check of outcome.checks)
      console.log(`${check.ok ? "ok  " : "FAIL"} ${check.name}${check.detail ? `: ${check.detail}` : ""}`);
    for (const note of record.notes) console.log(`note: ${note}`);
    if (outcome.checks.some((c) => !c.ok)) failed = true;
    if (!options.smoke) {
      await writeResults(bench.name, record);
      await updateReadme(bench.name, readmeBlock(record, command));
    }
  }
} finally {
  await servers.close();
}
process.exit(failed ? 1 : 0);
