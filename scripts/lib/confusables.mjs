// The confusables fold's table (src/council/normalize.ts), derived from Unicode's confusables.txt as
// `unhomoglyph` ships it. Pure: the generator (scripts/confusables-table.mjs) writes its output into
// src/council/confusables-table.ts, and a test checks the file is what this derives today.
//
// Only what the fold uses is kept: a non-ASCII source (the fold never touches ASCII: the table maps
// "m" to "rn"), never Han, kana, Hangul or Bopomofo (katakana "ノ" would read as "/"), whose
// prototype is printable ASCII once its marks are dropped (Greek "η" → "n"). That is about 2,000 of
// the table's 6,300 entries, and the Worker bundles 17 KB instead of unhomoglyph's 139 KB.

const NEVER_FOLDED = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Bopomofo}]/u;
const PRINTABLE_ASCII = /^[\u0020-\u007E]+$/;

/** Source code point → ASCII prototype, in code point order. */
export function asciiPrototypes(data) {
  const out = [];
  for (const [source, prototype] of Object.entries(data)) {
    const cp = source.codePointAt(0);
    if (cp < 0x80 || [...source].length !== 1 || NEVER_FOLDED.test(source)) continue;
    const bare = prototype.normalize("NFD").replace(/\p{M}/gu, "");
    if (PRINTABLE_ASCII.test(bare)) out.push([cp, bare]);
  }
  return out.sort((a, b) => a[0] - b[0]);
}

/**
 * The table as one string: a line per entry, the code point in base 36, a tab, the prototype (a tab
 * and a line break are not printable ASCII, so no prototype holds one). A string bundles as itself;
 * an object of non-ASCII keys bundles as `\uXXXX` escapes, several times its size.
 */
export function encodeTable(entries) {
  return entries.map(([cp, p]) => `${cp.toString(36)}\t${p}`).join("\n");
}
