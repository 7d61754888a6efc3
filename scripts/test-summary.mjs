#!/usr/bin/env node
// Sums the JSON reports of the three vitest suites into one closing line ("N passed, N failed"),
// so CI can tell a run that executed tests from one that executed none.
import { existsSync, readFileSync } from "node:fs";

const suites = ["workers", "runner", "e2e"];
let passed = 0;
let failed = 0;
let skipped = 0;
for (const suite of suites) {
  const file = `.test-results/${suite}.json`;
  if (!existsSync(file)) {
    console.error(`test-summary: ${file} is missing; the ${suite} suite did not run`);
    process.exit(1);
  }
  const report = JSON.parse(readFileSync(file, "utf8"));
  passed += report.numPassedTests;
  failed += report.numFailedTests;
  skipped += report.numPendingTests + report.numTodoTests;
}
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
