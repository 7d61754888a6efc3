/**
 * Entry point of the crewplane MCP server (stdio), started by a CLI through its MCP config: a team
 * member's, or the employee's own turn's. The identity file comes from CREWPLANE_MEMBER_CONFIG (one
 * variable for both kinds; the file's `kind` says which); nothing else identifies the caller.
 * A bad or missing identity exits 1, so the CLI reports the server as failed and the run fails.
 */
import { readFileSync } from "node:fs";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { MEMBER_CONFIG_ENV } from "../members/scaffold.ts";
import { createCrewplaneMcpServer, parseIdentity } from "./server.ts";
import type { CrewplaneIdentity } from "./server.ts";

function loadIdentity(): CrewplaneIdentity {
  const path = process.env[MEMBER_CONFIG_ENV];
  if (!path) throw new Error(`${MEMBER_CONFIG_ENV} is not set`);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    // V8's JSON errors quote the text they choke on, and the file holds a token.
    const why = (err as NodeJS.ErrnoException).code ?? "not valid JSON";
    throw new Error(`${path} could not be read: ${why}`);
  }
  const parsed = parseIdentity(raw);
  // zod's issue messages name paths and expectations, never the values read.
  if (!parsed.success)
    throw new Error(
      `${path} is not a valid identity config: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
    );
  return parsed.data;
}

async function main(): Promise<void> {
  const identity = loadIdentity();
  const server = createCrewplaneMcpServer(identity);
  await server.connect(new StdioServerTransport());
  // The CLI ends the session by closing our stdin.
  process.stdin.on("end", () => void server.close().finally(() => process.exit(0)));
}

main().catch((err: unknown) => {
  process.stderr.write(`crewplane-mcp: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
