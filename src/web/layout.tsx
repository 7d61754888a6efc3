/** @jsxImportSource hono/jsx */
import type { Child } from "hono/jsx";
import { assetUrl } from "./assets";

/** Who is looking at a console page: what the page offers depends on it (the server checks again). */
export interface Viewer {
  name: string;
  role: "viewer" | "manager" | "admin";
  csrf: string;
}

/**
 * htmx settings (read from this meta tag, so nothing runs inline): no injected indicator <style>
 * and no eval, which the Content-Security-Policy forbids; 4xx answers are swapped too, because a
 * form's inline validation errors come back as a 422/409 page.
 */
const HTMX_CONFIG = JSON.stringify({
  includeIndicatorStyles: false,
  allowEval: false,
  allowScriptTags: false,
  historyCacheSize: 0,
  responseHandling: [
    { code: "204", swap: false },
    { code: "[23]..", swap: true },
    { code: "4..", swap: true, error: false },
    { code: "...", swap: false, error: true },
  ],
});

const PUBLIC_LINKS = [
  ["/council", "Council"],
  ["/principles", "Principles"],
  ["/projects", "Projects"],
  ["/docs", "API"],
] as const;

/** The console's pages; a link needing a role above the viewer's is left out (the server refuses it anyway). */
const CONSOLE_LINKS = [
  ["/console", "Activity"],
  ["/console/approvals", "Approvals"],
  ["/console/topology", "Topology", "manager"],
  ["/console/employees", "Employees"],
  ["/console/tasks", "Tasks"],
  ["/console/routines", "Routines"],
  ["/console/projects", "Projects"],
  ["/console/matrix", "Matrix"],
  ["/console/spend", "Spend"],
  ["/console/runners", "Runners"],
  ["/console/operators", "Operators", "admin"],
  ["/console/audit", "Audit"],
  ["/console/config", "Config"],
] as const;

export interface LayoutProps {
  title: string;
  /** Which part of the site: the public pages or the console. */
  area: "public" | "console";
  /** The path of the page, to mark the current link. */
  path: string;
  viewer?: Viewer;
  /** The event stream this page listens to for live updates (none on the login page). */
  stream?: string;
  /** Further scripts of ours this page needs, by asset name (`reference.js`). */
  scripts?: string[];
  children?: Child;
}

const RANK = { viewer: 0, manager: 1, admin: 2 } as const;

function NavLinks(props: { links: readonly (readonly [string, string, Viewer["role"]?])[]; path: string; role?: Viewer["role"] }) {
  const rank = RANK[props.role ?? "viewer"];
  return (
    <ul>
      {props.links
        .filter(([, , min]) => !min || RANK[min] <= rank)
        .map(([href, label]) => {
          const current = href === props.path || (href !== "/console" && props.path.startsWith(`${href}/`));
          return (
            <li>
              <a href={href} aria-current={current ? "page" : undefined}>
                {label}
              </a>
            </li>
          );
        })}
    </ul>
  );
}

export function Layout(props: LayoutProps) {
  const title = `${props.title} · crewplane`;
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="htmx-config" content={HTMX_CONFIG} />
        <title>{title}</title>
        <link rel="stylesheet" href={assetUrl("app.css")} />
        <link rel="stylesheet" href={assetUrl("uplot.css")} />
        <script src={assetUrl("htmx.js")} defer></script>
        <script src={assetUrl("uplot.js")} defer></script>
        <script src={assetUrl("app.js")} defer></script>
        {(props.scripts ?? []).map((name) => (
          <script src={assetUrl(name)} defer></script>
        ))}
      </head>
      <body data-stream={props.stream}>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header class="site">
          <nav aria-label={props.area === "console" ? "Console" : "Public pages"}>
            <a class="brand" href={props.area === "console" ? "/console" : "/council"}>
              crewplane
            </a>
            <NavLinks links={props.area === "console" ? CONSOLE_LINKS : PUBLIC_LINKS} path={props.path} role={props.viewer?.role} />
          </nav>
          {props.area === "console" && props.viewer ? (
            <div class="who">
              <span>
                Signed in as <strong>{props.viewer.name}</strong> (<span data-role={props.viewer.role}>{props.viewer.role}</span>)
              </span>
              <a href="/council">Public pages</a>
              <form method="post" action="/console/logout">
                <input type="hidden" name="_csrf" value={props.viewer.csrf} />
                <button type="submit">Log out</button>
              </form>
            </div>
          ) : props.area === "public" ? (
            <div class="who">
              <a href="/console">Operator console</a>
            </div>
          ) : null}
        </header>
        <div id="flash" role="status" aria-live="polite"></div>
        <p class="live-state" id="live-state" hidden>
          Live updates: <span data-live-state>connecting</span>
        </p>
        <main id="main" tabindex={-1}>
          <h1>{props.title}</h1>
          {props.children}
        </main>
      </body>
    </html>
  );
}
