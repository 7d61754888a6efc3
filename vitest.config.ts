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
          bindings: {
            TEST_MIGRATIONS: migrations,
            ADMIN_TOKEN: "test-admin-token",
            ENVIRONMENT: "test",
            // Approval channel secrets for the tests; channels stay off until a test enables them in config.
            SLACK_WEBHOOK_URL: "https://hooks.slack.test/services/T000/B000/test-secret-path",
            SLACK_SIGNING_SECRET: "test-slack-signing-secret",
            APPROVAL_WEBHOOK_SECRET: "test-approval-webhook-secret",
          },
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
