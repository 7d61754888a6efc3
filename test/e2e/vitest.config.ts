import { defineConfig } from "vitest/config";

// End-to-end: the Worker under wrangler's test harness (workerd, local D1/DO/Queues) plus the real
// local-runner process with fake model CLIs on PATH. Node environment; plain HTTP between them.
export default defineConfig({
  test: {
    include: ["test/e2e/**/*.e2e.test.ts"],
    environment: "node",
    testTimeout: 120_000,
    hookTimeout: 180_000,
    fileParallelism: false,
  },
});
