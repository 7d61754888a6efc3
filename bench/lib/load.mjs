// One load generator for every benchmark: autocannon, at the same concurrency and duration for the
// product path and its baseline route in the same run.
import autocannon from "autocannon";

/**
 * Drives `url` with autocannon and reduces its result to what the tables show. `rate` counts only
 * 2xx answers per second; anything else is reported, never folded into the rate.
 */
export async function drive({ url, connections, duration, method = "GET", headers, body, requests, amount }) {
  const result = await autocannon({
    url,
    connections,
    // A slow answer is a data point, not an error: only give up on one after 30 s.
    timeout: 30,
    ...(amount ? { amount } : { duration }),
    method,
    headers: { "content-type": "application/json", ...headers },
    ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
    ...(requests ? { requests } : {}),
  });
  const ok = result["2xx"];
  return {
    rate: round(ok / result.duration, 1),
    requests: result.requests.total,
    ok,
    non_2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    duration_s: round(result.duration, 2),
    connections,
  };
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
