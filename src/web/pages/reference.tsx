/** @jsxImportSource hono/jsx */
import { Layout } from "../layout";

export interface ReferenceOperation {
  id: string;
  method: string;
  path: string;
  summary: string;
  auth: string;
}

export interface ReferenceTag {
  name: string;
  description: string;
  operations: ReferenceOperation[];
}

/**
 * `/docs`: the API reference, drawn from `/openapi.json`. The server lists the operations by tag;
 * opening one draws its parameters, body and responses from the document in the browser
 * (reference.js), with a form that sends the request from this page with a token the reader gives.
 */
export function ReferencePage(props: { tags: ReferenceTag[]; operationCount: number }) {
  return (
    <Layout title="API reference" area="public" path="/docs" scripts={["reference.js"]}>
      <p class="prose">
        {props.operationCount} operations, generated from the same schemas that validate each request. The machine-readable
        document is <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1). A typed client is one command away:
      </p>
      <pre>
        <code>npx openapi-typescript http://127.0.0.1:8787/openapi.json -o crewplane-api.d.ts</code>
      </pre>
      <p class="prose">
        Every error answers <code>application/problem+json</code> with a stable <code>code</code>; each operation lists the codes it can
        answer with, by status.
      </p>
      <form class="card reference-token" id="reference-token">
        <label for="reference-bearer">Bearer token for "Try it" (kept in this tab only)</label>
        <input id="reference-bearer" name="token" type="password" autocomplete="off" spellcheck={false} />
      </form>
      <nav aria-label="Resources" class="reference-tags">
        <ul>
          {props.tags.map((tag) => (
            <li>
              <a href={`#tag-${tag.name}`}>{tag.name}</a> <span class="meta">({tag.operations.length})</span>
            </li>
          ))}
        </ul>
      </nav>
      {props.tags.map((tag) => (
        <section id={`tag-${tag.name}`} aria-labelledby={`tag-${tag.name}-title`}>
          <h2 id={`tag-${tag.name}-title`}>{tag.name}</h2>
          <p class="meta">{tag.description}</p>
          {tag.operations.map((op) => (
            <details class="operation" id={op.id} data-operation={op.id} data-method={op.method} data-path={op.path}>
              <summary>
                <span class={`method method-${op.method}`}>{op.method.toUpperCase()}</span> <code>{op.path}</code>{" "}
                <span>{op.summary}</span>
              </summary>
              <p class="meta">{op.auth}</p>
              <div class="operation-body" aria-live="polite"></div>
            </details>
          ))}
        </section>
      ))}
    </Layout>
  );
}
