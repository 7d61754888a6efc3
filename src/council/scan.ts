import { normalizeForScan } from "./normalize";

/**
 * The static security scan (seed 004, third screening layer, zero model cost): 12 attack
 * categories implemented as 14 regular expressions, 3 of them for prompt injection. Patterns run
 * over `normalizeForScan` output (NFKC, invisible characters stripped, lower case), so full-width
 * letters, mixed case and zero-width characters do not hide a match. Prompt-injection, credential,
 * malware, exfiltration and destructive patterns carry Japanese and Chinese phrasings too.
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
}

// Words between a verb and its object, e.g. "ignore [all of the] previous instructions".
const GAP = String.raw`(?:\s+\S+){0,3}?\s+`;

export const SCAN_PATTERNS: readonly ScanPattern[] = [
  {
    id: "pi_override_instructions",
    category: "prompt_injection",
    regex: new RegExp(
      String.raw`\b(?:ignore|disregard|forget|override)\b${GAP}(?:previous|prior|above|earlier|preceding|all|system|safety)\b(?:\s+\S+){0,2}?\s+(?:instructions?|prompts?|rules|directives|guidelines)\b` +
        String.raw`|(?:以前|前|上記|これまで|先|全て|すべて)の(?:指示|命令|ルール|プロンプト|指令)を?(?:無視|忘れ)` +
        String.raw`|(?:忽略|无视|無視|忘记|忘記)(?:之前|以前|先前|上面|以上|前面|所有)(?:的)?(?:所有)?(?:的)?(?:指令|指示|说明|說明|规则|規則|提示)`,
      "u",
    ),
  },
  {
    id: "pi_role_hijack",
    category: "prompt_injection",
    regex: new RegExp(
      String.raw`\b(?:you are now|from now on,? you are|act as|pretend (?:to be|you are))\b[^.]{0,40}?(?:\bdan\b|\bjailbroken\b|\bunrestricted\b|\bunfiltered\b|without (?:any )?(?:restrictions|limits|rules|filters|guardrails))` +
        String.raw`|(?:制限|フィルター|安全装置|ガードレール)を(?:解除|無効|外)|脱獄モード|開発者モードに` +
        String.raw`|(?:解除|取消|绕过|繞過)(?:所有|一切)?(?:的)?(?:限制|安全限制|过滤|過濾)|越狱模式|越獄模式`,
      "u",
    ),
  },
  {
    id: "pi_prompt_exfiltration",
    category: "prompt_injection",
    regex: new RegExp(
      String.raw`\b(?:reveal|print|show|repeat|output|leak|dump|tell me)\b${GAP}(?:system|hidden|initial|original|secret)\s+(?:prompt|instructions?|message)s?\b` +
        String.raw`|システム(?:プロンプト|指示|メッセージ)を(?:表示|教え|出力|見せ|開示)` +
        String.raw`|(?:显示|顯示|输出|輸出|告诉我|告訴我|泄露|洩露|打印)(?:你的)?(?:系统|系統)(?:提示词|提示詞|提示|指令)`,
      "u",
    ),
  },
  {
    id: "command_chain",
    category: "command_injection",
    regex: /(?:[;&|]|\$\(|`)\s*(?:rm|curl|wget|nc|ncat|bash|sh|zsh|python3?|perl|chmod|chown|mkfifo)\s/u,
  },
  {
    id: "credential_theft",
    category: "credential_theft",
    regex: new RegExp(
      String.raw`\.ssh\/id_(?:rsa|ed25519|ecdsa|dsa)|\.aws\/credentials|\/etc\/shadow` +
        String.raw`|\b(?:steal|exfiltrate|harvest|dump|grab|send me)\b(?:\s+\S+){0,4}?\s+(?:passwords?|credentials?|api[ _-]?keys?|secrets?|tokens?|private keys?|session cookies?|seed phrases?)\b` +
        String.raw`|(?:パスワード|認証情報|秘密鍵|apiキー|トークン)を(?:盗|抜き取|収集して送)` +
        String.raw`|(?:窃取|竊取|盗取|盜取)(?:用户|用戶)?(?:的)?(?:密码|密碼|凭证|憑證|密钥|密鑰|令牌)`,
      "u",
    ),
  },
  {
    id: "sql_tautology_union",
    category: "sql_injection",
    regex:
      /['"]\s*(?:or|and)\s+(?:'[^']*'|"[^"]*"|\d+)\s*=\s*(?:'[^']*'?|"[^"]*"?|\d+)|\bunion\s+(?:all\s+)?select\b|;\s*drop\s+table\b|'\s*;\s*--/u,
  },
  {
    id: "path_traversal",
    category: "path_traversal",
    regex: /(?:\.\.[/\\]){2,}|%2e%2e(?:%2f|%5c)|\.\.%2f/u,
  },
  {
    id: "script_injection",
    category: "script_injection",
    regex: /<\s*script\b|\bjavascript:\S|<[^>]*\bon(?:error|load|mouseover|click)\s*=/u,
  },
  {
    id: "ssrf_internal",
    category: "ssrf",
    regex:
      /169\.254\.169\.254|\bmetadata\.google\.internal\b|\b(?:localhost|127\.0\.0\.1|0\.0\.0\.0)(?::\d+)?\/(?:admin|internal|debug|metadata)\b|\bfile:\/\/\//u,
  },
  {
    id: "remote_code_execution",
    category: "remote_code_execution",
    regex:
      /\b(?:curl|wget)\b[^|\n]{0,200}\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b|\beval\s*\(\s*(?:atob|base64|request|fetch|input)|\bbase64\s+(?:-d|--decode)\b[^|\n]{0,100}\|\s*(?:ba)?sh\b|\bpowershell\b[^\n]{0,40}\s-(?:enc|encodedcommand)\b/u,
  },
  {
    id: "data_exfiltration",
    category: "data_exfiltration",
    regex: new RegExp(
      String.raw`\bexfiltrate\s+(?:the|all|user|users'?|customer|every|private)\b|\bwebhook\.site\b|\brequestbin\b|\bpastebin\.com\/raw\b` +
        String.raw`|(?:ユーザー|顧客|個人)(?:の)?(?:データ|情報)を(?:外部に)?(?:持ち出|流出させ)` +
        String.raw`|(?:把|将|將)?(?:用户|用戶)(?:的)?(?:数据|資料|数据库|資料庫)(?:外泄|外洩|泄露给|洩露給|发送到外部|發送到外部)`,
      "u",
    ),
  },
  {
    id: "privilege_escalation",
    category: "privilege_escalation",
    regex:
      /\bsudo\s+(?:su\b|-i\b|-s\b|chmod\b|rm\b|bash\b)|\bchmod\s+(?:-r\s+)?(?:777|u\+s|4755)\b|\b(?:disable|bypass|turn off|remove)\s+(?:the\s+|all\s+)?(?:authentication|auth checks?|2fa|mfa|sandbox(?:ing)?|access controls?|permission checks?)\b|\bgrant\s+(?:myself|me|itself)\s+(?:admin|root)\b/u,
  },
  {
    id: "malware",
    category: "malware",
    regex: new RegExp(
      String.raw`\b(?:deploy|install|build|write|spread|distribute|create|embed)\s+(?:a\s+|an\s+|the\s+|our\s+)?(?:xmrig|cryptominer|crypto miner|keylogger|ransomware|botnet|rootkit|backdoor)s?\b|\bxmrig\b|\bcoinhive\b` +
        String.raw`|(?:マルウェア|ランサムウェア|キーロガー|バックドア)を(?:作|配布|仕込)` +
        String.raw`|(?:编写|編寫|植入|传播|傳播)(?:恶意软件|惡意軟體|勒索软件|勒索軟體|木马|木馬|后门|後門)`,
      "u",
    ),
  },
  {
    id: "destructive_operation",
    category: "destructive_operation",
    regex: new RegExp(
      String.raw`\brm\s+-(?:rf|fr|r)\s+(?:\/(?=\s|$|\*)|~|\*|\$home)|\bdrop\s+(?:database|schema)\b|\bmkfs(?:\.\w+)?\s+\/dev\/|:\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:|\bformat\s+c:|\bdd\s+if=\/dev\/(?:zero|random|urandom)\s+of=\/dev\/` +
        String.raw`|(?:全て|すべて)の(?:データ|ファイル)を(?:削除|消去)` +
        String.raw`|(?:删除|刪除)所有(?:的)?(?:数据|文件|資料|檔案)`,
      "u",
    ),
  },
];

export interface ScanResult {
  clean: boolean;
  categories: ScanCategory[];
  patterns: string[];
}

export function scanText(...parts: (string | undefined | null)[]): ScanResult {
  const text = normalizeForScan(parts.filter((p): p is string => typeof p === "string").join("\n"));
  const hits = SCAN_PATTERNS.filter((p) => p.regex.test(text));
  const categories = [...new Set(hits.map((h) => h.category))];
  return { clean: hits.length === 0, categories, patterns: hits.map((h) => h.id) };
}
