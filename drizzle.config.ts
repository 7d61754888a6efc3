import { defineConfig } from "drizzle-kit";

// Generates SQL migrations only; they are applied by wrangler (`wrangler d1 migrations apply`)
// and by applyD1Migrations in tests, never by drizzle-kit (D1 needs no credentials that way).
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema/index.ts",
  out: "./migrations",
});
