import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = fileURLToPath(new URL("../../..", import.meta.url));
export const fakeClisDir = join(repoRoot, "local-runner/fixtures/fake-clis");
export const fakeClaude = join(fakeClisDir, "claude");
export const realClaude = join(repoRoot, "node_modules/.bin/claude");
export const runnerBin = join(repoRoot, "local-runner/bin/crewplane-runner");
export const claudeFixtures = join(repoRoot, "test/runner/fixtures/claude");

/** A fresh temp dir and its cleanup; each test gets its own so nothing depends on order. */
export function tempDir(prefix = "crewplane-runner-test-"): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export const fakeCodex = join(fakeClisDir, "codex");
export const fakeGemini = join(fakeClisDir, "gemini");
export const fakeAgy = join(fakeClisDir, "agy");
export const fakeGrok = join(fakeClisDir, "grok");
/** Every fake, keyed by command, for runtimeTable(). */
export const fakeClis = { claude: fakeClaude, codex: fakeCodex, gemini: fakeGemini, agy: fakeAgy, grok: fakeGrok } as const;
export const realCodex = join(repoRoot, "node_modules/.bin/codex");
export const realGemini = join(repoRoot, "node_modules/.bin/gemini");
export const runnerFixtures = join(repoRoot, "test/runner/fixtures");
