import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// Workers tests: real workerd (Miniflare) with local D1, Durable Objects and Queues, offline.
export default defineConfig(async () => {
  const migrations = await readD1Migrations("./migrations");
  return {
    plugins: [
      cloudflareTest({
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: {
          bindings: { TEST_MIGRATIONS: migrations, ADMIN_TOKEN: "test-admin-token", ENVIRONMENT: "test" },
          // No test reaches the network: any outbound fetch of the Worker (a webhook push fired by
          // the real queue consumer) is answered here with 204, so nothing retries in the background
          // after a test file ends. Tests that examine pushes call the consumer with their own fetch.
          outboundService: () => new Response(null, { status: 204 }),
        },
      }),
    ],
    test: {
      include: ["test/workers/**/*.test.ts"],
      setupFiles: ["./test/workers/apply-migrations.ts"],
      testTimeout: 30_000,
      hookTimeout: 60_000,
    },
  };
});
