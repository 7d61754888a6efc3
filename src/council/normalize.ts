import { CONFUSABLE_PROTOTYPES } from "./confusables-table";

/**
 * The one normalizer of screened text (issue 18): the static scan (`scanText`), the rule-based
 * ethics review (its scan and denied terms) and, through the proposal code, the `/a2a` facade all
 * see text through it, so a variant that slips past one slips past none.
 *
 * In order:
 * 1. Every default-ignorable code point goes (Unicode's `Default_Ignorable_Code_Point`, not a
 *    list): zero-width characters, the combining grapheme joiner, variation selectors, tag
 *    characters, Hangul fillers, Mongolian selectors, bidi marks, soft hyphens. `ignorable: "space"`
 *    turns them into spaces instead, for a filler used where a space would be (the scan tries both).
 * 2. NFKD: full-width and mathematical letters become ASCII, accents come apart.
 * 3. Confusables fold (Unicode's confusables.txt, through `unhomoglyph`'s table, reduced at build time
 *    to what the fold uses: scripts/lib/confusables.mjs), then lower case: a
 *    non-ASCII letter whose prototype is ASCII becomes that ASCII (Cyrillic "о", Greek "ο" → "o"),
 *    marks on the prototype ignored (Greek "η" → "n"). Only non-ASCII characters fold (the table
 *    also maps ASCII, "m" → "rn", "|" → "l", "1" → "l", which would break every pattern), and never
 *    Han, kana or Hangul (the table maps katakana "ノ" to "/").
 * 4. Combining marks on ASCII letters go (accents, "zalgo" strokes); then NFKC recomposes the rest
 *    (kana voicing marks).
 * 5. Spaces between CJK characters go ("以前 の 指示" reads as "以前の指示"; with `lines: true` a
 *    gap that holds a line break stays one "\n", so a title does not glue onto a `系统：` line);
 *    whitespace runs become one space (`lines: true` keeps a run that holds a line break as one
 *    "\n", for patterns that look at line starts).
 * 6. Shell and script spellings that mean the same command: a line continuation (`\` at a line end)
 *    and `${IFS}` are a space; `''`/`""` inside a word or flag vanish (`r''m`, `u''+s`); a `\`
 *    before a letter inside a word or at a word's start vanishes (`r\m`, `\c\u\r\l`, `-\e`);
 *    adjacent string literals joined by `+` or `.` are one literal (`'r'+'m'`, `"c"."url"`); `/./`
 *    and repeated slashes (not after a scheme's `:`) are one `/`.
 */
export function normalizeForScan(text: string, opts: { ignorable?: "strip" | "space"; lines?: boolean } = {}): string {
  const ignorable = opts.ignorable === "space" ? " " : "";
  const collapse = (t: string) => t.replace(/\s+/gu, (run) => (opts.lines && /[\n\r\u2028\u2029\v\f\x85]/u.test(run) ? "\n" : " "));
  let s = foldConfusables(text.replace(DEFAULT_IGNORABLE, ignorable).normalize("NFKD")).toLowerCase();
  s = s.replace(MARKS_ON_ASCII, "").normalize("NFKC").replace(DEFAULT_IGNORABLE, ignorable).toLowerCase();
  // Between CJK characters a gap goes, but a line break stays one in the line-keeping form (a title above a `系统：` line).
  s = collapse(s.replace(/\\[ \t]*\r?\n/g, " ").replace(CJK_GAP, (run) => (opts.lines && LINE_BREAK.test(run) ? "\n" : "")));
  s = s
    .replace(/\$\{ifs\}|\$ifs\b/g, " ")
    .replace(/(?<=[\w+\-/.])(?:''|"")+(?=[\w+\-/.])/g, "")
    .replace(/(?<=[a-z\s;|&(='"-]|^)\\(?=[a-z])/g, "")
    .replace(/(['"])[ \t]*(?:\+|\.)[ \t]*\1/g, "")
    .replace(/\/(?:\.\/)+/g, "/")
    .replace(/(?<![:/])\/{2,}/g, "/");
  return collapse(s).trim();
}

/** Whether the text holds a default-ignorable code point (then the scan reads it both ways). */
export function hasIgnorable(text: string): boolean {
  return HAS_DEFAULT_IGNORABLE.test(text);
}

const DEFAULT_IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;
const HAS_DEFAULT_IGNORABLE = /\p{Default_Ignorable_Code_Point}/u;
const MARKS_ON_ASCII = /(?<=[\u0000-\u007F])\p{M}+/gu;
const CJK = String.raw`\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\u30FC\u3000-\u303F`;
const CJK_GAP = new RegExp(`(?<=[${CJK}])\\s+(?=[${CJK}])`, "gu");
const LINE_BREAK = /[\n\r\u2028\u2029\v\f\x85]/u;

/** Non-ASCII code point → its ASCII prototype (built once per isolate from the generated table). */
const PROTOTYPES: ReadonlyMap<string, string> = new Map(
  CONFUSABLE_PROTOTYPES.split("\n").map((line) => {
    const tab = line.indexOf("\t");
    return [String.fromCodePoint(parseInt(line.slice(0, tab), 36)), line.slice(tab + 1)] as const;
  }),
);

function foldConfusables(text: string): string {
  if (/^[\u0000-\u007F]*$/.test(text)) return text;
  let out = "";
  for (const ch of text) {
    if (ch.codePointAt(0)! < 0x80) {
      out += ch;
      continue;
    }
    // A lower-case letter whose own prototype is not ASCII may have one in upper case (Cyrillic
    // "к" → "ĸ", but "К" → "K").
    const upper = ch.toUpperCase();
    const prototype = PROTOTYPES.get(ch) ?? (upper !== ch ? PROTOTYPES.get(upper) : undefined);
    // The table reads capital I as "l" (they look alike); a capital letter that looks like it is an I.
    out += prototype === undefined ? ch : prototype === "l" && ch !== ch.toLowerCase() ? "i" : prototype;
  }
  return out;
}
