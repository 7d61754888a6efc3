// One load generator for every benchmark: autocannon, at the same concurrency and duration for the
// product path and its baseline route in the same run.
import autocannon from "autocannon";

/** One autocannon run, kept raw (histograms encoded) so several runs can be merged exactly. */
export function driveRaw({ url, connections, duration, method = "GET", headers, body, requests, amount }) {
  return autocannon({
    url,
    connections,
    // A slow answer is a data point, not an error: only give up on one after 30 s.
    timeout: 30,
    skipAggregateResult: true,
    ...(amount ? { amount } : { duration }),
    method,
    headers: { "content-type": "application/json", ...headers },
    ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
    ...(requests ? { requests } : {}),
  });
}

/**
 * Merges raw runs of one path into what the tables show. `rate` counts only 2xx answers per second
 * of measured time; anything else is reported, never folded into the rate. Percentiles come from the
 * merged latency histogram.
 */
export function summarize(raws, { url, connections }) {
  const duration = raws.reduce((sum, r) => sum + r.duration, 0);
  const merged = autocannon.aggregateResult(
    raws.map((r) => ({ ...r })),
    { url, connections },
  );
  return {
    rate: round(merged["2xx"] / duration, 1),
    requests: merged.requests.sent,
    ok: merged["2xx"],
    non_2xx: merged.non2xx,
    errors: merged.errors,
    timeouts: merged.timeouts,
    p50_ms: merged.latency.p50,
    p99_ms: merged.latency.p99,
    duration_s: round(duration, 2),
    connections,
  };
}

export async function drive(opts) {
  return summarize([await driveRaw(opts)], opts);
}

/** A few sequential requests first, so the isolate, the Durable Object and D1 are warm. */
export async function warm(url, init, times = 10) {
  for (let i = 0; i < times; i++) await fetch(url, init).then((r) => r.arrayBuffer());
}

export function round(value, digits = 0) {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

export function percentile(values, p) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))], 1);
}
