import { createServer, request as httpRequest, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { brotliDecompressSync, gunzipSync, inflateSync } from "node:zlib";
import { contractProblem, type OpenApiDocument } from "../factories/contract-check";

/** Bodies worth checking: JSON and problem+json (HTML, SSE, archives pass through unchecked but their status and type are still checked). */
const BUFFER_LIMIT = 4 * 1024 * 1024;

/** The body as the client reads it: the Worker compresses for clients that accept it. */
function decoded(bytes: Buffer, encoding: string): string {
  if (encoding === "gzip") return gunzipSync(bytes).toString("utf8");
  if (encoding === "deflate") return inflateSync(bytes).toString("utf8");
  if (encoding === "br") return brotliDecompressSync(bytes).toString("utf8");
  return bytes.toString("utf8");
}

/**
 * A pass-through HTTP proxy in front of the Worker that checks every answer against the Worker's
 * own OpenAPI document: whoever talks to the stack (the test, the real runner, Chromium, the EvoMap
 * client) goes through it. Bodies stream through untouched; a copy of each one (up to 4 MB) is
 * checked when it ends. `violations()` lists every answer that broke the contract.
 */
export async function startContractProxy(target: string): Promise<{ url: string; violations: () => string[]; close: () => Promise<void> }> {
  const doc = (await (await fetch(`${target}/openapi.json`)).json()) as OpenApiDocument;
  const upstream = new URL(target);
  const found: string[] = [];

  const server = createServer((req: IncomingMessage, res) => {
    const forward = httpRequest(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        const type = String(answer.headers["content-type"] ?? "");
        const chunks: Buffer[] = [];
        let size = 0;
        answer.on("data", (chunk: Buffer) => {
          if (size <= BUFFER_LIMIT && !type.startsWith("text/event-stream")) chunks.push(chunk);
          size += chunk.length;
          res.write(chunk);
        });
        answer.on("end", () => {
          res.end();
          const body = size <= BUFFER_LIMIT ? decoded(Buffer.concat(chunks), String(answer.headers["content-encoding"] ?? "")) : "";
          const checkBody = size <= BUFFER_LIMIT && !type.startsWith("text/event-stream");
          const problem = contractProblem(
            doc,
            { method: req.method ?? "GET", url: req.url ?? "/" },
            { status: answer.statusCode ?? 0, contentType: type || null, body: checkBody ? body : "" },
          );
          // An unread body (too large, a stream) is not a schema failure: only its status and type count.
          if (problem && (checkBody || (!problem.includes("does not match") && !problem.includes("not JSON")))) found.push(problem);
        });
      },
    );
    forward.on("error", () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(forward);
    res.on("close", () => forward.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    violations: () => [...found],
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
