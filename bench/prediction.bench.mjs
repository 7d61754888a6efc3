// Prediction engine (issue 21, seed 003 §3.3 and §5.1): the zero-LLM step that runs after every
// conversation — predict + extract + calculateError + updateModel + route — on a 20-turn bilingual
// conversation against a mature user model (60 conversations, confidence 1), beside a no-op pipeline
// of the same shape in the same run. The seed promises each step in under 1 ms.
//
// The engine is pure TypeScript with no Worker API, so this measures it in-process in Node: tsx (a
// pinned devDependency) loads src/prediction/index.ts through its `tsImport` API, without registering a
// global loader, and the same module a Worker bundles runs under V8 here. A round trip to a Worker would
// only add the HTTP cost the other benchmarks already measure and hide a sub-millisecond function in it.
// (The harness still starts both Workers before any benchmark; this one does not use them.)
//
//   product   one step: the five calls above, results kept live so nothing is optimised away
//   baseline  the same loop calling five functions with the same parameters that return prebuilt
//             objects of the same shapes (the floor: the loop, the calls, the timer)
//
// Slices alternate (baseline, product, product, baseline, …; 4 each in a full run, 1 in smoke), each
// timing every step with process.hrtime.bigint(). rate = 1000 / p50 ms; ratio = product / baseline rate,
// so it says how many no-op steps one real step costs. A second pass times each function alone.
import { round } from "./lib/load.mjs";

const NOW = new Date("2026-03-01T12:00:00.000Z");

/** A 20-turn conversation: user messages in English and Chinese, one correction, follow-ups, long replies. */
function conversation() {
  const users = [
    "How do I configure the deploy pipeline for our staging cluster on kubernetes?",
    "請幫我檢查生產環境的部署設定，特別是資料庫連線的部分",
    "No, that's wrong. The pipeline uses terraform modules, please fix the staging config.",
    "好的，那監控告警要怎麼設定？",
    "What about rollbacks?",
    "部署失敗的時候會自動回滾嗎？",
    "Can you show the helm values for the ingress controller and the certificate manager?",
    "謝謝，資料庫遷移的步驟也寫一下",
    "ok",
    "Great, and how do we run the smoke tests after every deploy to staging?",
  ];
  const reply = (i) =>
    `Step ${i + 1}. ` +
    "Here is how the staging deploy works: the pipeline builds the image, pushes it to the registry, applies the terraform plan for the cluster and then rolls the release out with helm; ".repeat(
      2,
    ) +
    "部署流程：先建置映像檔，推送到倉庫，再套用基礎設施設定，最後逐步發佈新版本並觀察監控指標。";
  const turns = [];
  users.forEach((content, i) => {
    turns.push({ role: "user", content, at: new Date(NOW.getTime() - (20 - 2 * i) * 60_000).toISOString() });
    turns.push({ role: "assistant", content: reply(i), at: new Date(NOW.getTime() - (19 - 2 * i) * 60_000).toISOString() });
  });
  return turns;
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

function stats(samplesNs, label) {
  const ms = Float64Array.from(samplesNs, (ns) => ns / 1e6).sort();
  const p50 = pct(ms, 50);
  return {
    ...(label ? { label } : {}),
    connections: 1,
    rate: round(1000 / p50, 0),
    requests: ms.length,
    ok: ms.length,
    non_2xx: 0,
    errors: 0,
    timeouts: 0,
    p50_ms: round(p50, 4),
    p50_ns: Math.round(p50 * 1e6),
    p99_ms: round(pct(ms, 99), 4),
    max_ms: round(ms[ms.length - 1], 3),
  };
}

/**
 * Runs `step` repeatedly for `ms` milliseconds, timing each call (wall clock, ns) into `samples`, and
 * adds the process's CPU time over the slice to `cpu.us` (a step the scheduler pre-empts costs wall
 * time, not CPU time, so CPU µs per step is the figure a loaded machine does not inflate).
 */
function slice(step, ms, samples, cpu) {
  const end = performance.now() + ms;
  const c0 = process.cpuUsage();
  let i = 0;
  while (performance.now() < end) {
    for (let k = 0; k < 64; k++, i++) {
      const t0 = process.hrtime.bigint();
      step(i);
      samples.push(Number(process.hrtime.bigint() - t0));
    }
  }
  const c = process.cpuUsage(c0);
  cpu.us += c.user + c.system;
}

/**
 * µs per call of `fn`: `n` calls in batches of 32, each batch timed; the median batch, so a pause of
 * the shared machine's scheduler or a major GC lands in a few batches rather than in the figure.
 */
function perCall(fn, n) {
  const batches = [];
  for (let done = 0, i = 0; done < n; done += 32) {
    const t0 = process.hrtime.bigint();
    for (let k = 0; k < 32; k++) fn(i++);
    batches.push(Number(process.hrtime.bigint() - t0) / 32);
  }
  batches.sort((a, b) => a - b);
  return round(batches[Math.floor(batches.length / 2)] / 1000, 2);
}

export default {
  name: "prediction",
  async run(ctx) {
    const { options, log } = ctx;
    // Imported here, not at the top, so the other benchmarks never load tsx.
    const { tsImport } = await import("tsx/esm/api");
    const P = await tsImport("../src/prediction/index.ts", import.meta.url);
    const turns = conversation();
    const feedback = [{ polarity: "positive", strength: 0.3 }];
    const first = turns[0].content;

    // A mature model: 60 earlier conversations (confidence 1), each with a subject of its own, so the
    // topic distribution is full (64 topics) and every update prunes it: the dear case.
    let model = null;
    for (let i = 0; i < 60; i++) {
      const own = { role: "user", content: `service${i}, module${i}, region${i}`, at: turns[0].at };
      const past = [own, ...turns.slice(0, 2 + 2 * (i % 10))];
      const m = P.extract(past);
      model = P.updateModel(model, m, P.inferSatisfaction(m), NOW);
    }
    const thresholds = { ...P.DEFAULT_THRESHOLDS };

    // One real step, kept to check every measured step computed the same thing.
    const ref = (() => {
      const p = P.predict(model, first, NOW);
      const m = P.extract(turns, feedback);
      const e = P.calculateError(p, m, thresholds);
      return { p, m, e, next: P.updateModel(model, m, e.inferred_satisfaction, NOW), r: P.route(e, 1) };
    })();

    let sink = 0;
    let mismatched = 0;
    const product = (i) => {
      const p = P.predict(model, first, NOW);
      const m = P.extract(turns, feedback);
      const e = P.calculateError(p, m, thresholds);
      const next = P.updateModel(model, m, e.inferred_satisfaction, NOW);
      const r = P.route(e, i % 4);
      if (e.composite_error !== ref.e.composite_error || next.total_conversations !== 61) mismatched++;
      sink += r.consecutive_significant + next.total_conversations;
    };
    // Same parameters, same calls, prebuilt results of the same shapes.
    const noop = {
      predict: (_model, _message, _now) => ref.p,
      extract: (_turns, _feedback) => ref.m,
      calculateError: (_p, _m, _t) => ref.e,
      updateModel: (_model, _m, _s, _now) => ref.next,
      route: (_e, _n) => ref.r,
    };
    const baseline = (i) => {
      const p = noop.predict(model, first, NOW);
      const m = noop.extract(turns, feedback);
      const e = noop.calculateError(p, m, thresholds);
      const next = noop.updateModel(model, m, e.inferred_satisfaction, NOW);
      const r = noop.route(e, i % 4);
      if (e.composite_error !== ref.e.composite_error || next.total_conversations !== 61) mismatched++;
      sink += r.consecutive_significant + next.total_conversations;
    };

    // Smoke: a quarter of a second in all, enough to prove the benchmark runs.
    const totalMs = options.smoke ? 250 : options.duration * 1000;
    const rounds = options.smoke ? 1 : 4;
    const sliceMs = totalMs / (2 * rounds);
    log(`warming up, then ${rounds} × 2 slices of ${round(sliceMs / 1000, 2)} s per side`);
    // Warm the JIT by count, not time, so a slow machine still measures optimised code.
    for (let i = 0; i < (options.smoke ? 500 : 5_000); i++) product(i);
    for (let i = 0; i < 50_000; i++) baseline(i);

    const prodNs = [];
    const baseNs = [];
    const prodCpu = { us: 0 };
    const baseCpu = { us: 0 };
    for (let r = 0; r < rounds; r++) {
      if (r % 2 === 0) {
        slice(baseline, sliceMs, baseNs, baseCpu);
        slice(product, sliceMs, prodNs, prodCpu);
      } else {
        slice(product, sliceMs, prodNs, prodCpu);
        slice(baseline, sliceMs, baseNs, baseCpu);
      }
    }

    // CPU time of single steps (getrusage through process.cpuUsage, µs resolution): what a step costs
    // the machine whether or not the scheduler lets it run to the end in one go.
    const cpuUs = [];
    for (let i = 0; i < (options.smoke ? 300 : 10_000); i++) {
      const c0 = process.cpuUsage();
      product(i);
      const c = process.cpuUsage(c0);
      cpuUs.push(c.user + c.system);
    }
    cpuUs.sort((a, b) => a - b);
    const cpuP50 = pct(cpuUs, 50);
    const cpuP99 = pct(cpuUs, 99);

    // Each function alone (median µs per call), after the step measurement so both see a warm JIT.
    const n = options.smoke ? 500 : 20_000;
    const e0 = ref.e;
    // A full 50-prediction window, due for calibration: observe + calibrate at their dearest.
    let metaState = P.newMetaCognition();
    for (let i = 0; i < 50; i++) metaState = P.observe(metaState, e0, e0);
    metaState = { ...metaState, predictions_since_calibration: 99 };
    const each = {
      "predict µs": perCall(() => (sink += P.predict(model, first, NOW).confidence), n),
      "extract µs": perCall(() => (sink += P.extract(turns, feedback).message_count), n),
      "calculateError µs": perCall(() => (sink += P.calculateError(ref.p, ref.m, thresholds).composite_error), n),
      "updateModel µs": perCall(() => (sink += P.updateModel(model, ref.m, e0.inferred_satisfaction, NOW).total_conversations), n),
      "route µs": perCall((i) => (sink += P.route(e0, i % 4).consecutive_significant), n),
      "observe + calibrate µs": perCall(() => (sink += P.calibrate(P.observe(metaState, e0, e0)).stats.window_size), n),
    };

    const prod = stats(prodNs);
    const base = stats(baseNs, "no-op pipeline, same shapes");
    const p99us = round(prod.p99_ms * 1000, 1);
    // The seed's "< 1 ms" is a target, reported like the other benchmarks' goals: a shared machine's
    // scheduler can stretch a 99th percentile, so it never fails the run; the checks are about correctness.
    const wallP99 = prod.p99_ms < 1 ? "wall p99 met too" : "wall p99 NOT met";
    const target = prod.p50_ms < 1 && cpuP99 < 1000 ? `met (wall p50, CPU p99); ${wallP99}` : "NOT met";
    return {
      rows: [
        {
          path: "predict + extract + calculateError + updateModel + route, 20-turn conversation",
          product: prod,
          baseline: base,
          extra: {
            "target < 1 ms per step (seed)": target,
            "step p50 / p99 / max µs": `${round(prod.p50_ms * 1000, 1)} / ${p99us} / ${round(prod.max_ms * 1000, 0)}`,
            "CPU µs per step (mean, incl. GC)": round(prodCpu.us / prodNs.length, 1),
            "CPU µs per step p50 / p99": `${cpuP50} / ${cpuP99}`,
            "no-op p50 µs": round(base.p50_ns / 1000, 3),
            // The table's ratio (rates, 2 decimals) rounds to 0 here; this is the same comparison as a cost.
            "step / no-op p50": `${Math.round(prod.p50_ns / Math.max(1, base.p50_ns))}×`,
            ...each,
          },
        },
      ],
      checks: [
        {
          name: "every measured step computed the reference result",
          ok: mismatched === 0 && Number.isFinite(sink),
          detail: `${mismatched} of ${prodNs.length + baseNs.length} steps differed; composite error ${ref.e.composite_error} (${ref.e.category}), action ${ref.r.action.kind}`,
        },
      ],
      notes: [
        `per step: p50 ${round(prod.p50_ms * 1000, 1)} µs, p99 ${p99us} µs, max ${round(prod.max_ms * 1000, 0)} µs over ${prodNs.length} steps (wall clock); CPU time ${round(prodCpu.us / prodNs.length, 1)} µs on average over the slices, p50 ${cpuP50} µs and p99 ${cpuP99} µs over ${cpuUs.length} single steps; the seed's target is < 1 ms`,
        "in-process in Node (tsx tsImport of src/prediction), no Worker: rate = 1000 / p50 ms of single steps; ratio = step rate / no-op rate, which rounds to 0 at two decimals, hence the 'step / no-op p50' column",
        `the conversation: ${ref.m.message_count} turns (${ref.m.user_message_count} user in English and Chinese, replies of ${Math.round(ref.m.avg_assistant_response_length)} characters), ${ref.m.user_corrections} correction, ${ref.m.user_follow_ups} follow-ups, language ${ref.m.detected_language}; the model: ${model.total_conversations} conversations, ${Object.keys(model.topic_distribution).length} topics`,
        "per-function columns: µs per call of each function alone, the median of batches of 32 calls",
      ],
    };
  },
};
