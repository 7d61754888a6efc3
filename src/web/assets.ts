import htmx from "htmx.org/dist/htmx.min.js";
import uplot from "uplot/dist/uPlot.iife.min.js";
import uplotCss from "uplot/dist/uPlot.min.css";
import appCss from "./assets/app.css";
import appJs from "./assets/app.client.js";
import referenceJs from "./assets/reference.client.js";

export interface Asset {
  body: string;
  type: string;
  /** A short content hash: the asset's URL carries it (`?v=`), so it can be cached for good. */
  version: string;
}

/** FNV-1a over the UTF-16 units: synchronous, once per isolate, enough to tell two versions apart. */
function version(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, "0");
}

/**
 * uPlot formats numbers with `Intl.NumberFormat(navigator.language)` as it loads, which throws on a
 * locale Intl does not take (Linux Chromium under a POSIX locale reports `en-US@posix`). Prepended
 * to its script: the tag without its `@…` variant, else `en-US`, so every page loads whatever the
 * browser's locale.
 */
const INTL_FALLBACK = `(function () {
  function ok(tag) { try { new Intl.NumberFormat(tag); return true; } catch (e) { return false; } }
  var tag = navigator.language;
  if (ok(tag)) return;
  var safe = tag && ok(tag.split("@")[0]) ? tag.split("@")[0] : "en-US";
  Object.defineProperty(navigator, "language", { configurable: true, get: function () { return safe; } });
})();
`;

function asset(body: string, type: string): Asset {
  return { body, type, version: version(body) };
}

/**
 * Everything the pages load, by file name under `/assets/`: no CDN, nothing inline (the pages'
 * Content-Security-Policy allows scripts and styles from this origin only).
 */
export const ASSETS: ReadonlyMap<string, Asset> = new Map([
  ["htmx.js", asset(htmx, "text/javascript; charset=utf-8")],
  ["uplot.js", asset(INTL_FALLBACK + uplot, "text/javascript; charset=utf-8")],
  ["uplot.css", asset(uplotCss, "text/css; charset=utf-8")],
  ["app.js", asset(appJs, "text/javascript; charset=utf-8")],
  ["app.css", asset(appCss, "text/css; charset=utf-8")],
  ["reference.js", asset(referenceJs, "text/javascript; charset=utf-8")],
]);

/** `/assets/<name>?v=<version>`: the URL a page links. */
export function assetUrl(name: string): string {
  const a = ASSETS.get(name);
  return `/assets/${name}${a ? `?v=${a.version}` : ""}`;
}
