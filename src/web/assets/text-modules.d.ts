// The web console's client assets are bundled as text by wrangler.toml's `[[rules]] type = "Text"`
// entry (and the vitest plugin, which applies the same rules): each import is the file's contents.
declare module "htmx.org/dist/htmx.min.js" {
  const text: string;
  export default text;
}
declare module "uplot/dist/uPlot.iife.min.js" {
  const text: string;
  export default text;
}
declare module "*.css" {
  const text: string;
  export default text;
}
declare module "*.client.js" {
  const text: string;
  export default text;
}
