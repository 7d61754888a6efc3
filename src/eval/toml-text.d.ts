// Suite case files are bundled as text by the `[[rules]] type = "Text"` entry in wrangler.toml.
declare module "*.toml" {
  const text: string;
  export default text;
}
