/** @jsxImportSource hono/jsx */
import type { Child } from "hono/jsx";

/** An ISO-8601 instant as a readable UTC time, machine-readable in `datetime`. */
export function Time(props: { at: string | null | undefined }) {
  if (!props.at) return <Unknown />;
  const text = props.at
    .replace("T", " ")
    .replace(/\.\d{3}Z$/, " UTC")
    .replace(/Z$/, " UTC");
  return <time datetime={props.at}>{text}</time>;
}

/** A value nobody reported: absent, never shown as 0 (DESIGN principle 4). */
export function Unknown(props: { label?: string }) {
  return <span class="unknown">{props.label ?? "unknown"}</span>;
}

/** A status word with its own class, so outcomes differ by text and shape, never by colour alone. */
export function Badge(props: { status: string; kind?: string }) {
  return (
    <span class={`badge badge-${props.kind ?? "status"} s-${props.status.replace(/[^a-z0-9_-]/gi, "")}`} data-status={props.status}>
      {props.status.replaceAll("_", " ")}
    </span>
  );
}

export function Num(props: { value: number | null | undefined; digits?: number }) {
  if (props.value === null || props.value === undefined || !Number.isFinite(props.value)) return <Unknown />;
  const digits = props.digits ?? 2;
  return <span class="num">{Number.isInteger(props.value) ? String(props.value) : props.value.toFixed(digits)}</span>;
}

export function Pct(props: { value: number | null | undefined }) {
  if (props.value === null || props.value === undefined || !Number.isFinite(props.value)) return <Unknown />;
  return <span class="num">{(props.value * 100).toFixed(1)} %</span>;
}

export function Empty(props: { children?: Child }) {
  return <p class="empty">{props.children}</p>;
}

/** The server's validation errors for one field, tied to it with `aria-describedby`. */
export function FieldErrors(props: { id: string; errors: readonly string[] | undefined }) {
  if (!props.errors || props.errors.length === 0) return null;
  return (
    <ul class="field-errors" id={props.id}>
      {props.errors.map((e) => (
        <li>{e}</li>
      ))}
    </ul>
  );
}

export interface FormProblem {
  code: string;
  detail: string;
  /** Field path → messages; "" for the form as a whole. */
  fields: Record<string, string[]>;
}

/** A form-level problem (its stable code shown beside the text). */
export function ProblemNote(props: { problem: FormProblem | null | undefined }) {
  if (!props.problem) return null;
  const p = props.problem;
  const whole = p.fields[""] ?? [];
  return (
    <div class="problem" role="alert" data-code={p.code}>
      <p>
        <strong>{p.detail}</strong> <code>{p.code}</code>
      </p>
      {whole.length ? (
        <ul>
          {whole.map((m) => (
            <li>{m}</li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function scalar(v: unknown): Child {
  if (v === null || v === undefined) return <span class="none">none</span>;
  if (v === "unknown") return <Unknown />;
  if (typeof v === "boolean") return <span>{v ? "yes" : "no"}</span>;
  if (typeof v === "number") return <Num value={v} digits={4} />;
  if (typeof v === "string" && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(v)) return <Time at={v} />;
  return <span>{String(v)}</span>;
}

/**
 * Any JSON value the API returns, readable without knowing its shape: objects as definition lists,
 * arrays of flat objects as tables, the rest as lists. Used for records whose every field matters
 * but whose layout does not (effective config, evidence, audit status).
 */
export function Data(props: { value: unknown; depth?: number }): Child {
  const v = props.value;
  const depth = props.depth ?? 0;
  if (depth > 6) return <code>{JSON.stringify(v)}</code>;
  if (Array.isArray(v)) {
    if (v.length === 0) return <span class="none">none</span>;
    const flat = v.every((x) => isPlainObject(x) && Object.values(x).every((y) => !isPlainObject(y) && !Array.isArray(y)));
    if (flat) {
      const cols = [...new Set(v.flatMap((x) => Object.keys(x as object)))];
      return (
        <div class="table-wrap" tabindex={0} role="group" aria-label="Table (scrolls sideways)">
          <table>
            <thead>
              <tr>
                {cols.map((k) => (
                  <th scope="col">{k}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {v.map((row) => (
                <tr>
                  {cols.map((k) => (
                    <td>{scalar((row as Record<string, unknown>)[k])}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      );
    }
    return (
      <ul class="data-list">
        {v.map((x) => (
          <li>
            <Data value={x} depth={depth + 1} />
          </li>
        ))}
      </ul>
    );
  }
  if (isPlainObject(v)) {
    const entries = Object.entries(v);
    if (entries.length === 0) return <span class="none">none</span>;
    return (
      <dl class="data">
        {entries.map(([k, x]) => (
          <div>
            <dt>{k}</dt>
            <dd>
              <Data value={x} depth={depth + 1} />
            </dd>
          </div>
        ))}
      </dl>
    );
  }
  return scalar(v);
}

/** Tabs that are plain links (each tab is its own page, so they work without JavaScript). */
export function Tabs(props: { label: string; tabs: readonly { href: string; label: string; current: boolean }[] }) {
  return (
    <nav class="tabs" aria-label={props.label}>
      <ul>
        {props.tabs.map((t) => (
          <li>
            <a href={t.href} aria-current={t.current ? "page" : undefined}>
              {t.label}
            </a>
          </li>
        ))}
      </ul>
    </nav>
  );
}

/** A hidden field with the session's form token: every console form carries one. */
export function Csrf(props: { token: string }) {
  return <input type="hidden" name="_csrf" value={props.token} />;
}
