/**
 * The contract as a client meets it: /openapi.json is a valid OpenAPI 3.1 document, the typed
 * client the docs promise comes out of one command and compiles, and /docs works in a real
 * Chromium with no network (every asset from the Worker), down to sending a request from the page.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import chromium from "@sparticuz/chromium";
import { Validator } from "@seriousme/openapi-schema-validator";
import { chromium as pw, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, ROOT, startWorker } from "./stack";

type Stack = Awaited<ReturnType<typeof startWorker>>;
let stack: Stack;
let browser: Browser;
const SHOTS = join(ROOT, ".test-results", "browser");

beforeAll(async () => {
  stack = await startWorker();
  browser = await pw.launch({ executablePath: await chromium.executablePath(), args: chromium.args, headless: true });
  mkdirSync(SHOTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

describe("the OpenAPI document", () => {
  it("validates as OpenAPI 3.1, with a response schema for every success answer", async () => {
    const res = await fetch(`${stack.base}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.openapi).toBe("3.1.0");
    const withoutSuccess = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([, op]) => !Object.keys(op.responses).some((s) => /^[23]\d\d$/.test(s)))
        .map(([method]) => `${method} ${path}`),
    );
    expect(withoutSuccess).toEqual([]);
  });

  it("gives a typed client in one command (openapi-typescript), and the types compile", async () => {
    // Asynchronous: the contract proxy that answers the command runs in this process.
    const run = promisify(execFile);
    const dir = mkdtempSync(join(tmpdir(), "crewplane-client-"));
    try {
      const out = join(dir, "crewplane-api.d.ts");
      await run(join(ROOT, "node_modules/.bin/openapi-typescript"), [`${stack.base}/openapi.json`, "-o", out]);
      writeFileSync(
        join(dir, "use.ts"),
        [
          'import type { paths } from "./crewplane-api";',
          'type Approval = paths["/v1/approvals/{id}"]["get"]["responses"][200]["content"]["application/json"];',
          'export const status: Approval["status"] = "pending";',
          'type Refusal = paths["/v1/approvals/{id}/decide"]["post"]["responses"][409]["content"]["application/problem+json"];',
          'export const code: Refusal["code"] = "already_decided";',
        ].join("\n"),
      );
      await run(process.execPath, [
        join(ROOT, "node_modules/typescript/bin/tsc"),
        "--noEmit",
        "--strict",
        "--skipLibCheck",
        join(dir, "use.ts"),
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("/docs in Chromium, offline", () => {
  it("lists the operations, draws one when opened, and sends it with the reader's token", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const errors: string[] = [];
    const offsite: string[] = [];
    page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    page.on("pageerror", (e) => errors.push(e.message));
    // Offline means offline: any request that leaves the Worker's origin is refused and recorded.
    await context.route("**/*", (route) => {
      if (new URL(route.request().url()).origin !== new URL(stack.base).origin) {
        offsite.push(route.request().url());
        return route.abort();
      }
      return route.continue();
    });
    try {
      const res = await page.goto(`${stack.base}/docs`);
      expect(res?.status()).toBe(200);
      await page.getByRole("heading", { name: "API reference" }).waitFor();
      const listed = await page.locator("details.operation").count();
      expect(listed).toBeGreaterThan(150);

      const op = page.locator('details.operation[data-path="/v1/approvals/{id}/decide"][data-method="post"]');
      await op.locator("summary").click();
      await op.getByRole("heading", { name: "Parameters" }).waitFor();
      await expect(op.locator("dt").allTextContents()).resolves.toEqual(expect.arrayContaining(["200", "401", "403", "404", "409", "422"]));
      await op.getByRole("heading", { name: "Request body (application/json)" }).waitFor();

      const list = page.locator('details.operation[data-path="/v1/approvals"][data-method="get"]');
      await list.locator("summary").click();
      await page.getByLabel(/Bearer token/).fill(ADMIN_TOKEN);
      await list.getByLabel(/^limit/).fill("1");
      await list.getByRole("button", { name: /^Send GET/ }).click();
      await list.locator(".try-it-output", { hasText: "200" }).waitFor();
      expect(await list.locator(".try-it-output").textContent()).toContain('"approvals": []');

      await page.screenshot({ path: join(SHOTS, "docs-reference.png") });
      expect(errors).toEqual([]);
      expect(offsite).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
