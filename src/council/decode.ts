/**
 * The static scan's decoding pass: text a proposal carries in an encoded form, decoded in place so
 * the scan patterns can read it beside its context (`echo <base64> | base64 -d | sh` reads as
 * `echo rm -rf / | base64 -d | sh`). Pure, synchronous and bounded: at most `MAX_ROUNDS` rounds
 * (double encoding needs two), each a fixed set of linear replacements, and a round stops early
 * when nothing changed. No decoder makes text much longer than its input, so a hostile 64 KB
 * proposal costs a few linear passes.
 *
 * One round decodes, in order:
 * - Unicode tag characters (U+E0020–E007E) to the ASCII they shadow (normalization drops them as
 *   invisible; here they are read);
 * - HTML entities: decimal, hex and the common named ones;
 * - URL percent-encoding, `+` as a space inside an encoded token, `%uXXXX`, and overlong UTF-8
 *   (`%c0%ae` is ".");
 * - escapes: `\xHH`, `\uHHHH`, `\u{H…}`, octal `\NNN`;
 * - hex: `0x41 0x42 …` lists, `0x…` strings and bare runs of 16+ hex digits that decode to
 *   printable UTF-8 (a commit hash does not);
 * - base64 (and base64url) runs of 16+ characters that decode to printable UTF-8;
 * - character-code calls: `String.fromCharCode(…)`, SQL `CHAR(…)` (decimal or `0x` codes), `chr(…)` chains;
 * - Log4j lookups that spell a word a letter at a time (`${lower:j}`, `${::-n}`, `${env:X:-d}`);
 * - inline comments that split a keyword (`UN/**\/ION`, `<scr<!---->ipt>`);
 * - numeric IPv4 hosts in URLs (decimal, hex, octal, short `127.1`, IPv4-mapped IPv6) to their
 *   dotted form, and the userinfo before a host dropped (`http://docs.example@169.254.169.254/`);
 * - letter-spaced words (`i g n o r e   a l l`) joined, and spaced commands whose words are set
 *   apart by wider gaps (`r m   - r f   /` reads `rm -rf /`).
 */
export function decodedForms(text: string): string[] {
  const forms: string[] = [];
  const untagged = text.replace(TAG_CHARS, (c) => String.fromCharCode(c.codePointAt(0)! - 0xe0000));
  // Invisible characters would break an encoded run in two; NFKC makes full-width `％４１` read `%41`.
  let current = untagged.replace(DEFAULT_IGNORABLE, "").normalize("NFKC");
  if (untagged !== text) forms.push(current);
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const next = decodeOnce(current);
    if (next === current || next.length > current.length + GROWTH_ALLOWANCE) break;
    forms.push(next);
    current = next;
  }
  return forms;
}

const MAX_ROUNDS = 3;
// Rewriting a numeric host to its dotted form can lengthen text slightly; anything more is a bug.
const GROWTH_ALLOWANCE = 4096;
const TAG_CHARS = /[\u{E0020}-\u{E007E}]/gu;
const DEFAULT_IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;

function decodeOnce(s: string): string {
  return [
    decodeEntities,
    decodePercent,
    decodeEscapes,
    decodeHex,
    decodeBase64,
    decodeCharCodes,
    decodeLookups,
    dropSplittingComments,
    dropUserinfo,
    dottedHosts,
    joinSpacedRuns,
    joinSpacedLetters,
  ].reduce((t, step) => step(t), s);
}

const NAMED_ENTITIES: Record<string, string> = {
  lt: "<",
  gt: ">",
  amp: "&",
  quot: '"',
  apos: "'",
  nbsp: " ",
  colon: ":",
  sol: "/",
  bsol: "\\",
  lpar: "(",
  rpar: ")",
  period: ".",
  comma: ",",
  semi: ";",
  equals: "=",
  excl: "!",
  num: "#",
  dollar: "$",
  percnt: "%",
  plus: "+",
  ast: "*",
  lsqb: "[",
  rsqb: "]",
  lbrack: "[",
  rbrack: "]",
  lcub: "{",
  rcub: "}",
  lbrace: "{",
  rbrace: "}",
  verbar: "|",
  vert: "|",
  grave: "`",
  hyphen: "-",
  dash: "-",
  tab: "\t",
  newline: "\n",
};

function decodeEntities(s: string): string {
  if (!s.includes("&")) return s;
  return s.replace(/&(?:#0*(\d{1,7})|#x0*([0-9a-f]{1,6})|([a-z]{2,7}));?/gi, (m, dec?: string, hex?: string, name?: string) => {
    if (name !== undefined) return NAMED_ENTITIES[name.toLowerCase()] ?? m;
    return fromCodePoint(dec !== undefined ? Number(dec) : parseInt(hex!, 16)) ?? m;
  });
}

function decodePercent(s: string): string {
  if (!s.includes("%")) return s;
  return s
    .replace(/[^\s%]*%[0-9a-f]{2}\S*/gi, (token) => token.replace(/\+/g, " "))
    .replace(/%u([0-9a-f]{4})/gi, (m, hex: string) => fromCodePoint(parseInt(hex, 16)) ?? m)
    .replace(/(?:%[0-9a-f]{2})+/gi, (run) => utf8(bytesOf(run.slice(1).split("%")), { overlong: true }));
}

function decodeEscapes(s: string): string {
  if (!s.includes("\\")) return s;
  return s
    .replace(/\\u\{([0-9a-f]{1,6})\}|\\u([0-9a-f]{4})/gi, (m, a?: string, b?: string) => fromCodePoint(parseInt(a ?? b!, 16)) ?? m)
    .replace(/(?:\\x[0-9a-f]{2})+/gi, (run) => utf8(bytesOf(run.slice(2).split(/\\x/i))))
    .replace(/(?:\\[0-3][0-7]{2}){2,}/g, (run) =>
      utf8(
        run
          .slice(1)
          .split("\\")
          .map((o) => parseInt(o, 8)),
      ),
    );
}

function decodeHex(s: string): string {
  return s
    .replace(/(?:\b0x[0-9a-f]{2}\b[\s,]*){4,}/gi, (run) => printable(utf8(bytesOf(run.match(/(?<=0x)[0-9a-f]{2}/gi)!))) ?? run)
    .replace(
      /\b(?:0x)?((?:[0-9a-f]{2}){8,})\b/gi,
      (run, hex: string) => printable(utf8(bytesOf(hex.match(/../g)!), { fatal: true })) ?? run,
    );
}

function decodeBase64(s: string): string {
  return s.replace(/(?<![\w+/-])[A-Za-z0-9+/_-]{16,}={0,2}(?![\w+/=-])/g, (run) => {
    const body = run.replace(/=+$/, "").replace(/-/g, "+").replace(/_/g, "/");
    if (body.length % 4 === 1) return run;
    let binary: string;
    try {
      binary = atob(body + "=".repeat((4 - (body.length % 4)) % 4));
    } catch {
      return run;
    }
    const decoded = printable(
      utf8(
        Array.from(binary, (c) => c.charCodeAt(0)),
        { fatal: true },
      ),
    );
    return decoded === undefined || !/[a-z]{2}/i.test(decoded) ? run : ` ${decoded} `;
  });
}

function decodeCharCodes(s: string): string {
  return s
    .replace(/\b(?:string\.fromcharcode|char)\s*\(\s*(\d{1,7}(?:\s*,\s*\d{1,7})+)\s*\)/gi, (m, list: string) => codes(list.split(","), m))
    .replace(/\b(?:string\.fromcharcode|char)\s*\(\s*(0x[0-9a-f]{1,6}(?:\s*,\s*0x[0-9a-f]{1,6})+)\s*\)/gi, (m, list: string) =>
      codes(
        list.split(",").map((h) => String(parseInt(h.trim().slice(2), 16))),
        m,
      ),
    )
    .replace(/(?:\bchr\s*\(\s*\d{1,7}\s*\)\s*[+.]?\s*){2,}/gi, (m) => codes(m.match(/\d+/g)!, m));
}

function dropSplittingComments(s: string): string {
  // SQL reads `/**/` as a space (`UNION/**/SELECT`); HTML drops a comment inside a tag name.
  return s.replace(/\/\*[^*\n]{0,20}\*\//g, " ").replace(/<!--[^>]{0,8}?-->/g, "");
}

/** `${lower:j}ndi`, `${::-j}ndi`, `${env:NOPE:-j}ndi` → `jndi`: lookups a logger expands to their default text. */
function decodeLookups(s: string): string {
  if (!s.includes("${")) return s;
  return s.replace(/\$\{(?:(?:lower|upper):|::-|[a-z]{2,12}:[^{}:\s]{0,40}:-)([^{}$\s]{0,20})\}/gi, (_m, text: string) => text);
}

/** `http://docs.example@169.254.169.254/` → `http://169.254.169.254/`: a URL parser connects to what follows the `@`. */
function dropUserinfo(s: string): string {
  if (!s.includes("@")) return s;
  return s.replace(/\b([a-z][a-z0-9+.-]{1,15}:\/\/)[^\s/@?#]{1,100}@(?=[^\s/@?#])/gi, "$1");
}

/** `http://2852039166/` → `http://169.254.169.254/`: hosts a URL parser reads as IPv4 addresses. */
function dottedHosts(s: string): string {
  return s.replace(
    /\b([a-z][a-z0-9+.-]{1,15}:\/\/)(?:[^\s/@?#]*@)?(\[[0-9a-f:.]+\]|[0-9a-fx.]+)(?=[:/?#\s"'<>)\]]|$)/gi,
    (m, scheme: string, host: string) => {
      const dotted = ipv4Of(host);
      return dotted === undefined ? m : `${scheme}${dotted}`;
    },
  );
}

function ipv4Of(host: string): string | undefined {
  if (host.startsWith("[")) {
    const mapped = /^\[(?:0{0,4}:){0,5}:?ffff:(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))\]$/i.exec(host);
    if (!mapped) return undefined;
    if (mapped[1]) return mapped[1];
    const [hi, lo] = [parseInt(mapped[2]!, 16), parseInt(mapped[3]!, 16)];
    return [hi >> 8, hi & 255, lo >> 8, lo & 255].join(".");
  }
  const parts = host.split(".");
  if (parts.length > 4 || parts.some((p) => p === "")) return undefined;
  const nums = parts.map((p) =>
    /^0x[0-9a-f]*$/i.test(p) ? parseInt(p.slice(2) || "0", 16) : /^0[0-7]+$/.test(p) ? parseInt(p, 8) : /^\d+$/.test(p) ? Number(p) : NaN,
  );
  if (nums.some((n) => Number.isNaN(n))) return undefined;
  const last = nums.pop()!;
  if (nums.some((n) => n > 255) || last >= 256 ** (4 - nums.length)) return undefined;
  const value = nums.reduce((acc, n, i) => acc + n * 256 ** (3 - i), 0) + last;
  const dotted = [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join(".");
  return dotted === host ? undefined : dotted;
}

/**
 * `r m   - r f   /` → `rm -rf /`: single characters one space apart, grouped into words by wider
 * gaps. At least one word of two or more characters and three letters in all, so a lone `a  b` stays.
 */
function joinSpacedRuns(s: string): string {
  // One-character tokens separated by spaces; each token must end where it starts, so a match never backtracks.
  return s.replace(/(?<!\S)\S(?!\S)(?: +\S(?!\S))+/g, (run) => {
    if (!/ {2}/.test(run) || !/\S \S/.test(run) || (run.match(/\p{L}/gu)?.length ?? 0) < 3) return run;
    return run
      .split(/ {2,}/)
      .map((word) => word.replace(/ /g, ""))
      .join(" ");
  });
}

/** `I g n o r e   a l l` → `Ignore   all`: four or more single letters or digits, one space apart. */
function joinSpacedLetters(s: string): string {
  return s.replace(/(?<![\p{L}\p{N}])(?:[\p{L}\p{N}] (?=[\p{L}\p{N}])){3,}[\p{L}\p{N}](?![\p{L}\p{N}])/gu, (run) => run.replace(/ /g, ""));
}

function bytesOf(hexPairs: string[]): number[] {
  return hexPairs.map((h) => parseInt(h, 16));
}

/** UTF-8 bytes to text; `overlong` reads the over-long two- and three-byte forms path filters miss. */
function utf8(bytes: number[], opts: { fatal?: boolean; overlong?: boolean } = {}): string {
  const fixed: number[] = [];
  for (let i = 0; i < bytes.length; i++) {
    const [b0, b1, b2] = [bytes[i]!, bytes[i + 1] ?? -1, bytes[i + 2] ?? -1];
    const cont = (b: number) => b >= 0x80 && b <= 0xbf;
    if (opts.overlong && (b0 === 0xc0 || b0 === 0xc1) && cont(b1)) {
      fixed.push(((b0 & 0x1f) << 6) | (b1 & 0x3f));
      i += 1;
    } else if (opts.overlong && b0 === 0xe0 && b1 >= 0x80 && b1 <= 0x9f && cont(b2)) {
      const cp = ((b1 & 0x3f) << 6) | (b2 & 0x3f);
      if (cp < 0x80) fixed.push(cp);
      else fixed.push(0xc0 | (cp >> 6), 0x80 | (cp & 0x3f));
      i += 2;
    } else fixed.push(b0);
  }
  try {
    return new TextDecoder("utf-8", { fatal: opts.fatal ?? false, ignoreBOM: false }).decode(new Uint8Array(fixed));
  } catch {
    return "\uFFFD";
  }
}

/** The text when nearly all of it is readable (no replacement characters, few control characters). */
function printable(text: string): string | undefined {
  if (text.length === 0 || text.includes("\uFFFD")) return undefined;
  const control = text.match(/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/g)?.length ?? 0;
  return control / text.length <= 0.1 ? text : undefined;
}

function fromCodePoint(cp: number): string | undefined {
  return cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : undefined;
}

function codes(list: string[], fallback: string): string {
  const chars = list.map((n) => fromCodePoint(Number(n.trim())));
  return chars.every((c) => c !== undefined) ? chars.join("") : fallback;
}
