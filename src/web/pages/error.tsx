/** @jsxImportSource hono/jsx */
import { Layout } from "../layout";

export interface PageProblem {
  status: number;
  code: string;
  title: string;
  detail: string;
}

/** An error as a page: the status, the stable code and the detail (nothing internal: the root handler already redacted it). */
export function ErrorPage(props: { problem: PageProblem; area: "public" | "console"; path: string }) {
  const p = props.problem;
  return (
    <Layout title={p.title} area={props.area} path={props.path}>
      <div class="problem" role="alert" data-code={p.code} data-status={String(p.status)}>
        <p>
          <strong>{p.detail}</strong>
        </p>
        <p>
          Error <code>{p.code}</code> (HTTP {p.status})
        </p>
      </div>
      <p>
        <a href={props.area === "console" ? "/console" : "/council"}>Back to the start</a>
      </p>
    </Layout>
  );
}
