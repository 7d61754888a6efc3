import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig, type Plugin } from "vitest/config";
import { buildContract, contractModule } from "./test/factories/github-standin/contract.ts";

// GitHub's OpenAPI description (13 MB) is too big for a workerd isolate: Node compacts it into the
// contract the GitHub stand-in checks requests against, served as `virtual:github-contract`.
function githubContract(): Plugin {
  const id = "virtual:github-contract";
  return {
    name: "crewplane:github-contract",
    resolveId: (source) => (source === id ? `\0${id}` : undefined),
    load(resolved) {
      if (resolved !== `\0${id}`) return undefined;
      const require = createRequire(import.meta.url);
      const doc = JSON.parse(readFileSync(require.resolve("@octokit/openapi/generated/api.github.com.json"), "utf8"));
      const { version } = JSON.parse(readFileSync(require.resolve("@octokit/openapi/package.json"), "utf8"));
      return contractModule(buildContract(doc, version));
    },
  };
}

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
            // The request factories check every answer against /openapi.json (test/factories/contract.ts).
            CONTRACT_CHECK: process.env.CONTRACT_CHECK ?? "on",
            // Approval channel secrets for the tests; channels stay off until a test enables them in config.
            SLACK_WEBHOOK_URL: "https://hooks.slack.test/services/T000/B000/test-secret-path",
            SLACK_SIGNING_SECRET: "test-slack-signing-secret",
            APPROVAL_WEBHOOK_SECRET: "test-approval-webhook-secret",
            // The audit checkpoint key for the tests (an Ed25519 private JWK; never a real one).
            AUDIT_SIGNING_KEY:
              '{"crv":"Ed25519","d":"Ttp-5I1ycC88FPU8UaLLKXxvpgohS0oJlDPjzlPEhE4","x":"aqc1o5cqNyln50UDBmIOCU7HcHDHLVvOjNDCyyl7NE8","kty":"OKP"}',
          },
          // No test reaches the network: any outbound fetch of the Worker (a webhook push fired by
          // the real queue consumer) is answered here with 204, so nothing retries in the background
          // after a test file ends. Tests that examine pushes call the consumer with their own fetch.
          outboundService: () => new Response(null, { status: 204 }),
        },
      }),
      githubContract(),
    ],
    test: {
      include: ["test/workers/**/*.test.ts"],
      setupFiles: ["./test/workers/apply-migrations.ts"],
      testTimeout: 30_000,
      hookTimeout: 60_000,
    },
  };
});
