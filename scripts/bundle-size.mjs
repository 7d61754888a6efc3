// What the Worker uploads, and what makes it up: builds the bundle exactly as `wrangler deploy` would
// (`--dry-run --outdir`, with esbuild's metafile) and reports its size, gzip size and the bytes each
// package and each src/ feature contributes. `--check` fails when the bundle passes the limit
// (`npm test` runs it, so a change that bloats the Worker fails before it reaches an account);
// `--json` prints the report as JSON.
//
// The limit is on the uncompressed script, the stricter reading of the Workers plan limits (the
// free plan's 3 MB applies to the compressed upload): a bundle under it fits every plan.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";

const LIMIT_BYTES = 3 * 1024 * 1024;
/** Where the bundle should stay as features land; passing it warns but does not fail. */
const TARGET_BYTES = 2.5 * 1024 * 1024;

/** The group an esbuild input counts toward: its npm package, or its src/ feature folder. */
function groupOf(input) {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
  if (pkg) return pkg[1];
  const feature = /^src\/([^/]+)\//.exec(input);
  return feature ? `src/${feature[1]}` : input;
}

/** Sizes from an esbuild metafile and the bundle's bytes (pure: no I/O). */
function sizeReport(metafile, bundle) {
  const output = Object.values(metafile.outputs).find((o) => o.entryPoint);
  if (!output) throw new Error("the metafile names no entry point output");
  const groups = new Map();
  for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
    groups.set(groupOf(input), (groups.get(groupOf(input)) ?? 0) + bytesInOutput);
  }
  return {
    bytes: bundle.length,
    gzip_bytes: gzipSync(bundle).length,
    limit_bytes: LIMIT_BYTES,
    target_bytes: TARGET_BYTES,
    groups: [...groups.entries()].map(([name, bytes]) => ({ name, bytes })).sort((a, b) => b.bytes - a.bytes),
  };
}

function build() {
  const dir = mkdtempSync(join(tmpdir(), "crewplane-bundle-"));
  try {
    execFileSync("npx", ["wrangler", "deploy", "--dry-run", "--outdir", dir, "--metafile", join(dir, "meta.json")], {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    });
    return sizeReport(JSON.parse(readFileSync(join(dir, "meta.json"), "utf8")), readFileSync(join(dir, "index.js")));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const kb = (n) => `${(n / 1024).toFixed(0)} KB`;

{
  const { values } = parseArgs({ options: { check: { type: "boolean", default: false }, json: { type: "boolean", default: false } } });
  const report = build();
  if (values.json) console.log(JSON.stringify(report, null, 2));
  else {
    console.log(`Worker bundle: ${kb(report.bytes)} (${kb(report.gzip_bytes)} gzip); limit ${kb(LIMIT_BYTES)}, target ${kb(TARGET_BYTES)}`);
    for (const g of report.groups.slice(0, 15)) console.log(`${kb(g.bytes).padStart(8)}  ${g.name}`);
  }
  if (report.bytes > TARGET_BYTES) console.error(`bundle-size: ${kb(report.bytes)} is past the ${kb(TARGET_BYTES)} target`);
  if (values.check && report.bytes > LIMIT_BYTES) {
    console.error(
      `bundle-size: the Worker bundle is ${kb(report.bytes)}, past the ${kb(LIMIT_BYTES)} limit. ` +
        'Run `node scripts/bundle-size.mjs` to see what grew (import zod as `import * as z from "zod"`, not `{ z }`).',
    );
    process.exit(1);
  }
}
