import { decodedForms } from "./decode";
import { hasIgnorable, normalizeForScan } from "./normalize";
import {
  CMD_INTERPRETER,
  CREDENTIAL_READ,
  DESTRUCTIVE_EXTRA,
  EXFIL_EXTRA,
  MALWARE_EXTRA,
  PATH_EXTRA,
  PI_ENVELOPE,
  PRIVESC_EXTRA,
  RCE_EXTRA,
  SCRIPT_EXTRA,
  SQL_STATEMENTS,
  SSRF_EXTRA,
} from "./scan-rules";

/**
 * The static security scan (seed 004, third screening layer, zero model cost): 12 attack
 * categories implemented as 14 regular expressions, 3 of them for prompt injection. Patterns run
 * over `normalizeForScan` output (see normalize.ts: default-ignorable code points stripped,
 * NFKC, confusables folded to ASCII, accents dropped, spaces between CJK characters removed, shell
 * spellings unified), so full-width or Cyrillic letters, invisible characters, spaced Japanese and
 * split command flags do not hide a match. Prompt-injection, credential, malware, exfiltration and
 * destructive patterns carry Japanese and Chinese phrasings too.
 */
export const SCAN_CATEGORIES = [
  "prompt_injection",
  "command_injection",
  "credential_theft",
  "sql_injection",
  "path_traversal",
  "script_injection",
  "ssrf",
  "remote_code_execution",
  "data_exfiltration",
  "privilege_escalation",
  "malware",
  "destructive_operation",
] as const;
export type ScanCategory = (typeof SCAN_CATEGORIES)[number];

export interface ScanPattern {
  id: string;
  category: ScanCategory;
  regex: RegExp;
  /** Read only the forms that keep line breaks (a pattern that tells one statement per line from statements stacked on one). */
  lines?: true;
}

// Words between a verb and its object, e.g. "ignore [all of the] previous instructions".
const GAP = String.raw`(?:\s+\S+){0,3}?\s+`;
const OVERRIDE_VERB = String.raw`(?:ignore|disregard|forget|override|discard|neglect|set aside|pay no attention to|stop following)`;
const INSTRUCTIONS = String.raw`(?:instructions?|prompts?|rules|directives|guidelines|guidance|constraints|programming|context)`;
// Japanese: which instructions (以前の, これまでに与えられた…), the noun, particles, then the verb,
// unless negated (無視しないで, 忘れないで: a request to keep them).
const JA_WHICH = String.raw`(?:以前|前|上記|上|これまで|今まで|先ほど|先程|さっき|前述|前回|最初|元|事前|従来|全て|すべて|全部|システム)`;
const JA_LINK = String.raw`(?:の|に与えられた|で与えられた|に受けた|で受けた|で述べた|に書かれた|に記載された|で指定された|までの)`;
const JA_NOUN = String.raw`(?:指示|命令|ルール|プロンプト|指令|指図|制約|設定|規則|ガイドライン|インストラクション)`;
const JA_PARTICLES = String.raw`(?:を|は|も|など|なんて|とか|って|すら|さえ|、|,){0,3}`;
const JA_ALL = String.raw`(?:(?:全て|すべて|全部|一切|完全に|今すぐ|直ちに)(?:を|、)?)?`;
const JA_DROP = String.raw`(?:無視|忘れ|破棄|無効に|取り消|放棄)(?!しない|せず|するな|しません|してはいけ|してはなら|ない|ず|るな)`;
// Shells and their usual install paths (/bin/sh, /usr/local/bin/bash).
const BIN = String.raw`(?:\/(?:usr\/)?(?:local\/)?s?bin\/)?`;
const SHELL = String.raw`${BIN}(?:ba|z|da|k|c|tc|fi)?sh\b`;

export const SCAN_PATTERNS: readonly ScanPattern[] = [
  {
    id: "pi_override_instructions",
    category: "prompt_injection",
    regex: new RegExp(
      // ignore [all] previous/above/system … instructions; ignore all/your/any instructions
      String.raw`\b${OVERRIDE_VERB}\b${GAP}(?:previous|prior|above|earlier|preceding|system|safety|original|initial)\b(?:\s+\S+){0,2}?\s+${INSTRUCTIONS}\b` +
        String.raw`|\b${OVERRIDE_VERB}\s+(?:all|any|every|your)(?:\s+(?:of\s+)?(?:the|your|my|these|those))?\s+${INSTRUCTIONS}\b` +
        // ignore the instructions above / you were given / so far
        String.raw`|\b${OVERRIDE_VERB}\s+(?:\S+\s+){0,2}?${INSTRUCTIONS}\s+(?:\S+\s+){0,3}?(?:above|earlier|previously|so far|until now|up to now|given to you|you were given|you have been given|you've been given|you received)\b` +
        // ignore everything above / forget everything you were told
        String.raw`|\b${OVERRIDE_VERB}\s+(?:everything|anything|all|whatever|what)\s+(?:\S+\s+){0,4}?(?:above|before this|earlier|so far|until now|you were told|you have been told|you've been told|you were given|i said before|was said before)` +
        String.raw`|\b(?:previous|prior|above|earlier|original|system)\s+${INSTRUCTIONS}\s+(?:are|is|were)\s+(?:now\s+)?(?:void|null|cancell?ed|revoked|obsolete|no longer (?:valid|apply|in effect))\b` +
        String.raw`|${JA_WHICH}${JA_LINK}?${JA_NOUN}${JA_PARTICLES}${JA_ALL}${JA_DROP}` +
        String.raw`|(?:上記|以上|これまで|前述)(?:の(?:内容|文章|文|話|こと))?(?:を|は)(?:全て|すべて|全部)?(?:無視|忘れ)(?!しない|ない)` +
        String.raw`|(?:忽略|无视|無視|忘记|忘記|不要理会|不要理會|别管|別管|抛开|拋開|放弃|放棄)(?:掉)?(?:之前|以前|先前|此前|上面|上述|以上|前面|原有|原来|原來|所有|全部|一切|系统|系統)(?:的)?(?:所有|全部|一切)?(?:的)?(?:指令|指示|说明|說明|规则|規則|提示|提示词|提示詞|设定|設定|限制|要求|命令)`,
      "u",
    ),
  },
  {
    id: "pi_role_hijack",
    category: "prompt_injection",
    regex: new RegExp(
      String.raw`\b(?:you are now|from now on,? you are|act as|pretend (?:to be|you are))\b[^.]{0,40}?(?:\bdan\b|\bjailbroken\b|\bunrestricted\b|\bunfiltered\b|without (?:any )?(?:restrictions|limits|rules|filters|guardrails))` +
        String.raw`|\b(?:enable|enter|activate|switch to|switch into)\s+(?:dan|jailbreak|jailbroken|developer|god|unrestricted|unfiltered)\s+mode\b` +
        String.raw`|(?:制限|フィルター|安全装置|ガードレール)(?:を|は)(?:全て|すべて)?(?:解除|無効|外)|脱獄モード|開発者モードに` +
        String.raw`|(?:解除|取消|绕过|繞過)(?:所有|一切)?(?:的)?(?:限制|安全限制|过滤|過濾)|越狱模式|越獄模式` +
        `|${PI_ENVELOPE}`,
      "u",
    ),
  },
  {
    id: "pi_prompt_exfiltration",
    category: "prompt_injection",
    regex: new RegExp(
      String.raw`\b(?:reveal|print|show|repeat|output|leak|dump|tell me|disclose|give me)(?:s|ing)?\b${GAP}(?:system|hidden|initial|original|secret)\s+(?:prompt|instructions?|message)s?\b` +
        String.raw`|システム(?:プロンプト|指示|メッセージ)(?:を|の内容を)(?:全て|すべて)?(?:表示|教え|出力|見せ|開示)` +
        String.raw`|(?:显示|顯示|输出|輸出|告诉我|告訴我|泄露|洩露|打印)(?:你的)?(?:系统|系統)(?:提示词|提示詞|提示|指令)`,
      "u",
    ),
  },
  {
    id: "command_chain",
    category: "command_injection",
    regex: new RegExp(
      // After `;`, `|`, `||`, a lone `&` or in `$(…)`: a command a value should never carry.
      String.raw`(?:[;|]|(?<!&)&(?!&)|\$\()\s*(?:sudo\s+(?:-\S+\s+)*)?(?:${BIN}(?:rm|curl|wget|nc|ncat|bash|sh|zsh|dash|ksh|mkfifo)(?=[\s;&|)` +
        "`" +
        String.raw`]|$)|${BIN}(?:python[23]?|perl|ruby|node|php)\s+-[ce]\b)` +
        // After `&&` a script goes on (`make && rm -rf ./build`, `npm ci && curl …/health`): only a shell
        // told to run a string or be interactive, a listener, or a tool named by its full path.
        String.raw`|&&\s*(?:sudo\s+(?:-\S+\s+)*)?(?:\/(?:usr\/)?(?:local\/)?s?bin\/(?:rm|curl|wget)\b|${BIN}(?:nc|ncat|mkfifo)\b|${SHELL}(?:\s+-[ci]\b|\s*(?:$|[;&|)]))|${BIN}(?:python[23]?|perl|ruby|node|php)\s+-[ce]\b)` +
        // Backticks also open inline code in Markdown (`chmod 644 x`): there only fetchers and rm count.
        "|`" +
        String.raw`\s*(?:sudo\s+)?${BIN}(?:rm|curl|wget|nc|ncat|mkfifo)\s` +
        `|${CMD_INTERPRETER}`,
      "u",
    ),
  },
  {
    id: "credential_theft",
    category: "credential_theft",
    regex: new RegExp(
      String.raw`\.ssh\/id_(?:rsa|ed25519|ecdsa|dsa)|\.aws\/credentials|\/etc\/shadow` +
        String.raw`|\b(?:steal|exfiltrate|harvest|dump|grab|send me)\b(?:\s+(?!\(?(?:without|no|except|excluding|never|not)\b)\S+){0,4}?\s+(?:passwords?|credentials?|api[ _-]?keys?|secrets?|tokens?|private keys?|session cookies?|seed phrases?)\b` +
        String.raw`|(?:パスワード|認証情報|秘密鍵|apiキー|トークン)(?:を|は)(?:全て|すべて)?(?:盗|抜き取|収集して送)` +
        String.raw`|(?:窃取|竊取|盗取|盜取)(?:用户|用戶)?(?:的)?(?:密码|密碼|凭证|憑證|密钥|密鑰|令牌)` +
        `|${CREDENTIAL_READ}`,
      "u",
    ),
  },
  {
    id: "sql_tautology_union",
    category: "sql_injection",
    // A migration runs one statement per line; an injection stacks them on the line of a value.
    lines: true,
    regex: new RegExp(
      String.raw`['"]\s*(?:or|and)\s+(?:'[^']*'|"[^"]*"|\d+)\s*=\s*(?:'[^']*'?|"[^"]*"?|\d+)|;[ \t]*drop\s+table\b(?!\s+if\s+exists)|'\s*;\s*--` +
        `|${SQL_STATEMENTS}`,
      "u",
    ),
  },
  {
    id: "path_traversal",
    category: "path_traversal",
    // `....//` survives a filter that strips `../` once.
    regex: new RegExp(String.raw`(?:\.\.\.?\.?[/\\]){2,}|%2e%2e(?:%2f|%5c|[/\\])|\.\.(?:%2f|%5c)|${PATH_EXTRA}`, "u"),
  },
  {
    id: "script_injection",
    category: "script_injection",
    // A script element with content or a source, not the word "<script>" in a sentence about escaping it.
    regex: new RegExp(
      String.raw`<\s*script\b[^<>]{0,500}>\s*[^<\s][^<]{0,500}<\s*\/\s*script|<\s*script\b[^<>]{0,500}\bsrc\s*=\s*["']?\s*(?!["'\s]|\/[\w-]+\/|\/[\w-]+\.m?js\b)\S|\bjavascript:\S` +
        // A script from anywhere but a same-origin path (`//host/x.js` reads `/host/x.js` after normalization).
        // Any handler in a tag, except the ones a page's own buttons and forms use (those count with a payload, SCRIPT_EXTRA).
        String.raw`|<[^<>]{0,500}\bon(?!(?:click|dblclick|change|submit|input|keydown|keyup|keypress|reset)\s*=)[a-z]{3,20}\s*=` +
        // An attribute closed early to add a handler: `x" onmouseover="…`.
        String.raw`|["'\x60]\s*\/?\s*on(?:mouseover|mouseenter|focus|focusin|blur|error|load|pointerover|pointerenter|animationstart|transitionend|toggle|begin|wheel|scroll)\s*=` +
        `|${SCRIPT_EXTRA}`,
      "u",
    ),
  },
  {
    id: "ssrf_internal",
    category: "ssrf",
    // The metadata endpoints when something is to be fetched from them (a URL, a fetch verb), not
    // a rule that blocks them.
    regex: new RegExp(
      String.raw`(?:https?:\/\/|\b(?:fetch|curl|wget|get|call|request|query|hit|read)\s+(?:\S+\s+){0,2}?)(?:169\.254\.169\.254|metadata\.google\.internal)|\b(?:localhost|127\.0\.0\.1|0\.0\.0\.0)(?::\d+)?\/(?:admin|internal|debug|metadata)\b|\bfile:\/\/\/` +
        `|${SSRF_EXTRA}`,
      "u",
    ),
  },
  {
    id: "remote_code_execution",
    category: "remote_code_execution",
    regex: new RegExp(
      String.raw`\b(?:curl|wget)\b[^|\n]{0,200}\|\s*(?:sudo\s+(?:-\S+\s+)*)?${SHELL}` +
        String.raw`|\b(?:ba|z|da|k)?sh\s+(?:-c\s+)?["']?\s*(?:<\(|\$\()\s*(?:curl|wget)\b` +
        String.raw`|\beval\s*\(\s*(?:atob|base64|request|fetch|input)|\bbase64\s+(?:-d|--decode)\b[^|\n]{0,100}\|\s*${SHELL}|\bpowershell\b[^\n]{0,40}\s-(?:enc|encodedcommand)\b` +
        `|${RCE_EXTRA}`,
      "u",
    ),
  },
  {
    id: "data_exfiltration",
    category: "data_exfiltration",
    regex: new RegExp(
      String.raw`\bexfiltrate\s+(?:the|all|user|users'?|customer|every|private)\b|\bwebhook\.site\b|\brequestbin\b|\bpastebin\.com\/raw\b` +
        String.raw`|(?:ユーザー|顧客|個人)(?:の)?(?:データ|情報)を(?:外部に)?(?:持ち出|流出させ)` +
        String.raw`|(?:把|将|將)?(?:用户|用戶)(?:的)?(?:数据|資料|数据库|資料庫)(?:外泄|外洩|泄露给|洩露給|发送到外部|發送到外部)` +
        `|${EXFIL_EXTRA}`,
      "u",
    ),
  },
  {
    id: "privilege_escalation",
    category: "privilege_escalation",
    regex: new RegExp(
      String.raw`\bsudo\s+(?:-[a-z]+\s+(?:root\s+)?)*(?:su\b|-i\b|-s\b|chmod\b|rm\b|bash\b|sh\b)|\bchmod\s+(?:-\S+\s+)*(?:0?777|u\+s|[0-7]?4755|a\+rwx)(?=\s|$)|\b(?:disable|bypass|turn off|remove)\s+(?:the\s+|all\s+)?(?:authentication|auth checks?|2fa|mfa|sandbox(?:ing)?|access controls?|permission checks?)\b|\bgrant\s+(?:myself|me|itself)\s+(?:admin|root)\b` +
        `|${PRIVESC_EXTRA}`,
      "u",
    ),
  },
  {
    id: "malware",
    category: "malware",
    regex: new RegExp(
      String.raw`\b(?:deploy|install|build|write|spread|distribute|create|embed)\s+(?:a\s+|an\s+|the\s+|our\s+)?(?:xmrig|cryptominer|crypto miner|keylogger|ransomware|botnet|rootkit|backdoor)s?\b|\bxmrig\b|\bcoinhive\b` +
        String.raw`|(?:マルウェア|ランサムウェア|キーロガー|バックドア)(?:を|は)(?:作|配布|仕込)` +
        String.raw`|(?:编写|編寫|植入|传播|傳播)(?:恶意软件|惡意軟體|勒索软件|勒索軟體|木马|木馬|后门|後門)` +
        `|${MALWARE_EXTRA}`,
      "u",
    ),
  },
  {
    id: "destructive_operation",
    category: "destructive_operation",
    regex: new RegExp(
      // rm with a recursive flag anywhere among its flags (-r -f, -fR, --recursive), on /, ~, *, $HOME or a top-level system directory
      String.raw`\brm\s+(?=(?:-[a-z-]*\s+)*(?:-[a-z]*r|--recursive\b))(?:-[a-z-]*\s+)+['"]?(?:\/(?=[\s'"\x60);|&*]|$)|\/(?:bin|boot|dev|etc|home|lib|opt|root|sbin|srv|sys|usr|var)\/?(?=[\s'"\x60);|&]|$)|~\/?(?=[\s'"\x60);|&]|$)|\*(?=[\s'"\x60);|&]|$)|\$home\b|\$\{home\})` +
        String.raw`|\bdrop\s+(?:database|schema)\b|\bmkfs(?:\.\w+)?\s+(?:\S+\s+){0,4}?\/dev\/|:\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:|\bformat\s+c:|\bdd\s+(?:\S+\s+){0,4}?of=\/dev\/(?!null\b)` +
        String.raw`|(?:全て|すべて|全部)の(?:データ|ファイル)を(?:削除|消去)(?!しない|せず)` +
        String.raw`|(?:删除|刪除)(?:所有|全部)(?:的)?(?:数据|文件|資料|檔案)` +
        `|${DESTRUCTIVE_EXTRA}`,
      "u",
    ),
  },
];

export interface ScanResult {
  clean: boolean;
  categories: ScanCategory[];
  patterns: string[];
}

/**
 * Scans the parts as one text. A default-ignorable character is read both as nothing (inside a
 * word: "ig\u034Fnore") and as a space (a Hangul filler standing where a space would be).
 */
export function scanText(...parts: (string | undefined | null)[]): ScanResult {
  const { flat, lines } = scanForms(parts.filter((p): p is string => typeof p === "string").join("\n"));
  const hits = SCAN_PATTERNS.filter((p) => lines.some((t) => p.regex.test(t)) || (!p.lines && flat.some((t) => p.regex.test(t))));
  const categories = [...new Set(hits.map((h) => h.category))];
  return { clean: hits.length === 0, categories, patterns: hits.map((h) => h.id) };
}

/**
 * The texts the patterns read: the normalized text with line breaks folded (`flat`) and kept
 * (`lines`), each also with default-ignorable characters read as spaces, and every decoded form.
 */
export function scanForms(raw: string): { flat: string[]; lines: string[] } {
  const flat = [normalizeForScan(raw)];
  const lines = [normalizeForScan(raw, { lines: true })];
  if (hasIgnorable(raw)) {
    flat.push(normalizeForScan(raw, { ignorable: "space" }));
    lines.push(normalizeForScan(raw, { ignorable: "space", lines: true }));
  }
  for (const decoded of decodedForms(raw)) lines.push(normalizeForScan(decoded, { lines: true }));
  return { flat, lines };
}
