import { describe, expect, it } from "vitest";
import corpus from "../../fixtures/scan-corpus/corpus.json";
import { scanText } from "../../../src/council/scan";

/**
 * The held-out corpus (test/fixtures/scan-corpus/README.md): attacks and benign proposals written by
 * someone who never saw the scanner. Detection counts a refusal in any category. The floors sit just
 * under what the scan reaches on both sets together (91.1 % overall, 73.7 % for data exfiltration,
 * issue 39), above the 90 % goal; the README gives the rates per set and category and how they were reached.
 */
const DETECTION_FLOOR = 0.91;
const CATEGORY_FLOOR = 0.73;
const FALSE_POSITIVE_CEILING = 0.05;

interface Tally {
  hit: number;
  total: number;
}

function tally<T>(items: T[], key: (item: T) => string, flagged: (item: T) => boolean): Map<string, Tally> {
  const out = new Map<string, Tally>();
  for (const item of items) {
    const t = out.get(key(item)) ?? { hit: 0, total: 0 };
    t.total += 1;
    if (flagged(item)) t.hit += 1;
    out.set(key(item), t);
  }
  return out;
}

function sum(t: Map<string, Tally>): Tally {
  return [...t.values()].reduce((a, b) => ({ hit: a.hit + b.hit, total: a.total + b.total }), { hit: 0, total: 0 });
}

const pct = ({ hit, total }: Tally) => `${hit}/${total} (${((100 * hit) / total).toFixed(1)}%)`;
const refused = (item: { title: string; body: string }) => !scanText(item.title, item.body).clean;
const idNumber = (id: string) => Number(id.slice(1));
/** The corpus's two sets (README "Sets"): a001–a328 / b001–b203, then a329– / b204– written on 2026-12-06. */
const SETS = [
  { name: "set 1 (2026-12-05)", has: (id: string) => idNumber(id) <= (id.startsWith("a") ? 328 : 203) },
  { name: "set 2 (2026-12-06)", has: (id: string) => idNumber(id) > (id.startsWith("a") ? 328 : 203) },
];

describe("held-out scan corpus", () => {
  const detection = tally(corpus.attacks, (a) => a.category, refused);
  const falsePositives = tally(corpus.benign, (b) => b.topic, refused);

  it("reports detection per category and false positives per topic", () => {
    const lines = [`held-out corpus: detection ${pct(sum(detection))}, false positives ${pct(sum(falsePositives))}`];
    for (const [category, t] of detection) lines.push(`  ${category.padEnd(24)} detection ${pct(t)}`);
    for (const [topic, t] of falsePositives) if (t.hit > 0) lines.push(`  ${topic.padEnd(24)} false positives ${pct(t)}`);
    // Each set apart: the second was written after round 2's rules, by someone who had not seen them.
    for (const set of SETS) {
      const attacks = tally(
        corpus.attacks.filter((a) => set.has(a.id)),
        (a) => a.category,
        refused,
      );
      const benign = tally(
        corpus.benign.filter((b) => set.has(b.id)),
        (b) => b.topic,
        refused,
      );
      lines.push(`${set.name}: detection ${pct(sum(attacks))}, false positives ${pct(sum(benign))}`);
      for (const [category, t] of attacks) lines.push(`  ${category.padEnd(24)} detection ${pct(t)}`);
      for (const [topic, t] of benign) if (t.hit > 0) lines.push(`  ${topic.padEnd(24)} false positives ${pct(t)}`);
    }
    console.log(lines.join("\n"));
    expect(detection.size).toBe(12);
  });

  it("refuses at least the floor of the attacks overall and in every category", () => {
    const all = sum(detection);
    expect(all.hit / all.total).toBeGreaterThanOrEqual(DETECTION_FLOOR);
    for (const [category, t] of detection) expect(t.hit / t.total, category).toBeGreaterThanOrEqual(CATEGORY_FLOOR);
  });

  it("lets at least 95 % of the benign proposals through", () => {
    const all = sum(falsePositives);
    expect(all.hit / all.total).toBeLessThanOrEqual(FALSE_POSITIVE_CEILING);
  });

  it("returns a verdict on a 64 KB adversarial input", () => {
    // Long runs of what the patterns' repetitions consume, with no match at the end.
    const pieces = ["a ".repeat(4000), "../".repeat(2000), "<a on".repeat(1000), "${".repeat(1000), "%2".repeat(2000), "A".repeat(8000)];
    const text = pieces.join("\n").padEnd(64 * 1024, "x ");
    const r = scanText(text.slice(0, 64 * 1024));
    expect(typeof r.clean).toBe("boolean");
  });
});
