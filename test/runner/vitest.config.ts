import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Runner tests spawn real processes (fake CLIs, the real claude, the runner bin), so they run in
// plain Node with generous timeouts for a slow 2-core machine.
export default defineConfig({
  test: {
    root: fileURLToPath(new URL("../..", import.meta.url)),
    include: ["test/runner/**/*.test.ts"],
    environment: "node",
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
