// Tables, bench/results/<name>.json and the latest table of each benchmark in bench/README.md.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import * as prettier from "prettier";
import { ROOT } from "./servers.mjs";
import { round } from "./load.mjs";

export function withRatios(rows) {
  return rows.map((row) => {
    const ratio = row.baseline.rate > 0 ? round(row.product.rate / row.baseline.rate, 2) : null;
    const goal = row.goal === undefined ? null : ratio !== null && ratio >= row.goal ? `≥ ${row.goal} met` : `≥ ${row.goal} NOT met`;
    const cpu = [row.product.cpu_ms_per_request, row.baseline.cpu_ms_per_request];
    // Baseline over product, like the rate ratio: 0.8 means the product's request costs 1.25 baselines.
    const cpu_ratio = cpu.every((v) => typeof v === "number" && v > 0) ? round(cpu[1] / cpu[0], 2) : null;
    return { ...row, ratio, goal_status: goal, cpu_ratio };
  });
}

export function table(rows) {
  const extraKeys = [...new Set(rows.flatMap((r) => Object.keys(r.extra ?? {})))];
  // Shown when any row was measured with ctx.compare on Linux; a row without the measurement says so.
  const withCpu = rows.some((r) => r.product.cpu_ms_per_request != null);
  const cpuHeader = withCpu ? ["workerd CPU ms/req (product / baseline)", "CPU ratio"] : [];
  const cpuCells = (r) =>
    withCpu
      ? [`${r.product.cpu_ms_per_request ?? "unknown"} / ${r.baseline.cpu_ms_per_request ?? "unknown"}`, String(r.cpu_ratio ?? "unknown")]
      : [];
  const header = [
    "product path",
    "conc.",
    "product /s",
    "baseline",
    "baseline /s",
    "ratio",
    "goal",
    "p50 ms",
    "p99 ms",
    "baseline p50 / p99 ms",
    "failed (product / baseline)",
    ...cpuHeader,
    ...extraKeys,
  ];
  const lines = rows.map((r) => [
    r.path,
    String(r.product.connections),
    String(r.product.rate),
    r.baseline.label,
    String(r.baseline.rate),
    ratioCell(r),
    r.goal_status ?? "",
    String(r.product.p50_ms),
    String(r.product.p99_ms),
    `${r.baseline.p50_ms} / ${r.baseline.p99_ms}`,
    `${failures(r.product)} / ${failures(r.baseline)}`,
    ...cpuCells(r),
    ...extraKeys.map((k) => String(r.extra?.[k] ?? "")),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(" | ")} |`;
  return [fmt(header), `| ${widths.map((w) => "-".repeat(w)).join(" | ")} |`, ...lines.map(fmt)].join("\n");
}

/**
 * The merged ratio, and beside it the lowest and highest of the rounds' own ratios when the row was
 * measured in alternating rounds (ctx.compare): a goal met by the merged ratio alone, with rounds
 * below it, is a goal met within this machine's noise, and the table says so.
 */
function ratioCell(r) {
  if (r.ratio === null) return "n/a";
  const slices = (r.product.slice_ratios ?? []).filter((v) => typeof v === "number");
  if (slices.length < 2) return String(r.ratio);
  return `${r.ratio} (rounds ${Math.min(...slices)}–${Math.max(...slices)})`;
}

/** Answers that were not 2xx, connection errors and timeouts: none of them count in a rate. */
function failures(stats) {
  return stats.non_2xx + stats.errors; // autocannon counts timeouts among errors
}

export function machine() {
  return { cpus: os.cpus().length, loadavg_1m: round(os.loadavg()[0], 2), node: process.version };
}

/** The commit measured; `+uncommitted` when src/ or the benchmarks differ from it (a run's own outputs aside). */
export function commit() {
  try {
    const sha = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
    const dirty =
      execFileSync("git", ["status", "--porcelain", "--", "src", "bench", ":!bench/README.md", ":!bench/results"], {
        cwd: ROOT,
        encoding: "utf8",
      }).trim() !== "";
    return dirty ? `${sha}+uncommitted` : sha;
  } catch {
    return "unknown";
  }
}

export async function writeResults(name, record) {
  mkdirSync(`${ROOT}/bench/results`, { recursive: true });
  const file = `${ROOT}/bench/results/${name}.json`;
  const options = (await prettier.resolveConfig(file)) ?? {};
  writeFileSync(file, await prettier.format(JSON.stringify(record), { ...options, filepath: file }));
}

/** Replaces (or appends) the block between this benchmark's markers in bench/README.md. */
export async function updateReadme(name, markdown) {
  const file = `${ROOT}/bench/README.md`;
  const text = readFileSync(file, "utf8");
  const start = `<!-- bench:${name}:start -->`;
  const end = `<!-- bench:${name}:end -->`;
  const block = `${start}\n${markdown.trim()}\n${end}`;
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  const next = from >= 0 && to > from ? text.slice(0, from) + block + text.slice(to + end.length) : `${text.trimEnd()}\n\n${block}\n`;
  // Formatted like every other file, so `npm run format:check` stays quiet after a run.
  const options = (await prettier.resolveConfig(file)) ?? {};
  writeFileSync(file, await prettier.format(next, { ...options, filepath: file }));
}

export function readmeBlock(record, command) {
  const checks = record.checks.map((c) => `- ${c.ok ? "✔" : "✘"} ${c.name}${c.detail ? `: ${c.detail}` : ""}`).join("\n");
  const notes = (record.notes ?? []).map((n) => `- ${n}`).join("\n");
  return [
    `Latest run: \`${command}\` on ${record.date} at \`${record.commit}\`; ${record.machine.cpus} cores, load average ${record.machine.loadavg_1m} before and ${record.machine.loadavg_1m_after} after; ${record.options.duration} s per measurement.`,
    "",
    record.table,
    "",
    checks,
    ...(notes ? ["", notes] : []),
  ].join("\n");
}
