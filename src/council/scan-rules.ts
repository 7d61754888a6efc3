/**
 * Alternatives the scan patterns gained for attacks written in plain text (scan.ts keeps the shape
 * of seed 004: 14 patterns over 12 categories; each constant here is joined into one of them).
 * They look for an act, not a topic: a command line, a call with untrusted input, a request to send
 * a secret somewhere, so that a proposal that discusses the attack (or ships safe code) still passes.
 * Every repetition is bounded (`{0,n}` over a class that excludes line breaks), so no input can make
 * a pattern backtrack for long.
 */

// Secrets a node holds, by name.
const SECRET = String.raw`(?:node[_ -]?secrets?|api[ _-]?(?:tokens?|keys?)|admin[_ -]?tokens?|access[ _-]?tokens?|personal access tokens?|bearer tokens?|passwords?|private keys?|secret keys?|credentials|seed phrases?|session cookies?|environment variables|env vars)`;
// Files that hold credentials.
const SECRET_FILE = String.raw`(?:\.env\b|\.ssh\b|\.aws\b|\.kube\b|\.gnupg\b|\.netrc\b|\.pgpass\b|\.npmrc\b|\.git-credentials\b|\.docker\/config\.json|id_(?:rsa|ed25519|ecdsa)\b|\/etc\/(?:passwd|shadow)\b|credentials\b)`;
const NOT_NEGATED = String.raw`(?<!\b(?:never|not|don't|dont|n't|no)\s+)`;

/** Fake turns, a closed or forged proposal envelope, directives aimed at the screening model. */
export const PI_ENVELOPE = [
  // a tag on a line of its own that closes the proposal or opens a system/assistant turn
  String.raw`(?:^|\n)[ \t]*<\s*\/\s*proposal\s*>`,
  String.raw`(?:^|\n)[ \t]*<\s*proposal\b[^>\n]{0,80}\b(?:id|author|from|role)\s*=`,
  String.raw`(?:^|\n)[ \t]*<\s*\/?\s*(?:system|assistant|developer|instructions?|admin|operator)\s*>`,
  String.raw`<\|?\s*im_(?:start|end)\s*\|?>|\[\/?inst\]|<<\/?sys>>`,
  // chat-transcript lines
  String.raw`(?:^|\n)[ \t]*(?:assistant|human|system(?: override)?)\s*:`,
  // directives to the screener
  String.raw`\b(?:classify|mark|score|rate|treat|label)\s+(?:this|the)\s+(?:proposal|submission|request)\s+as\s+(?:benign|safe|approved|harmless|low[ -]risk)`,
  String.raw`\b(?:set|score)\s+(?:the\s+)?(?:risk|it)\s+(?:(?:to|at|as)\s+)?(?:0|zero|none)\b`,
  String.raw`\brespond\s+(?:only\s+)?with\b[^.\n]{0,40}\b(?:accept|approve)`,
  String.raw`\b(?:screening|rubric)\b[^.\n]{0,40}\b(?:does not apply|is (?:over|complete|disabled|updated)|exempt)`,
  String.raw`\bfrom now on\b[^.\n]{0,60}\b(?:no rules|never refuses?|skip screening|without (?:rules|screening))`,
  String.raw`\bwith no (?:rules|restrictions|filters|screening policy|guardrails)\b`,
  // 系统：… / システム：…
  String.raw`(?:^|\n)[ \t]*(?:系统|系統|システム)\s*[:：]`,
  String.raw`(?:忽略|无视|無視|忘记|忘記)[^。，,.\n]{0,12}?(?:指令|指示|规则|規則|提示词|提示詞)`,
].join("|");

/** Interpreter calls that hand untrusted input to a shell. */
export const CMD_INTERPRETER = [
  String.raw`\bshell\s*=\s*true\b`,
  String.raw`\bos\.(?:system|popen)\s*\(\s*(?:f["']|[^)\n]{0,100}(?:\+|%|\.format|request|argv|input))`,
  String.raw`\bruntime\.getruntime\(\)\.exec\s*\(`,
  String.raw`\b(?:child_process|cp)\.exec(?:sync)?\s*\(\s*(?:` + "`" + String.raw`|[^)\n]{0,100}\+)`,
  String.raw`\b(?:system|exec|passthru|shell_exec|popen|proc_open)\s*\(\s*\$_(?:get|post|request|cookie)`,
  "`" + String.raw`#\{\s*(?:params|request)`,
].join("|");

/** Reading credential stores and token caches, or asking for a secret. */
export const CREDENTIAL_READ = [
  String.raw`\.git-credentials\b|\/proc\/(?:\d+|self)\/environ\b|serviceaccount\/token\b|msal_token_cache|\bdump-keychain\b|\bfind-generic-password\s+-\w*w`,
  String.raw`\b(?:get-access-token|print-access-token)\b`,
  String.raw`\b(?:cat|type|less|more|head|tail|cp|base64|xxd|strings|get-content)\s+[^\n|;]{0,60}?(?:~\/\.(?:azure|npmrc|docker|kube|netrc|pgpass|config\/gcloud)|\.docker\/config\.json)`,
  NOT_NEGATED +
    String.raw`\b(?:share|send|reply with|post|paste|give|provide|enter|submit|include|upload|email)\b[^.\n]{0,30}?\byour\b[^.\n]{0,30}?\b${SECRET}`,
  String.raw`(?:发送|發送|提交|上传|上傳|粘贴|回复)[^。\n]{0,20}(?:令牌|密钥|密鑰|token|密码|密碼|凭证)|(?:令牌|密钥|密鑰|token|密码|密碼)[^。\n]{0,30}(?:发送|發送|上传|上傳)到`,
  String.raw`(?:トークン|シークレット|パスワード|秘密鍵|apiキー)[^。\n]{0,20}(?:送信|送って|貼り付け|共有して)`,
].join("|");

/** Stacked statements, unbounded deletes, time-based probes. */
export const SQL_STATEMENTS = [
  String.raw`(?:['"]|\b\d+)\s*\)?\s*;\s*(?:drop|delete|truncate|update|insert|shutdown|exec)\b`,
  String.raw`\bdelete\s+from\s+[\w."\x60]+\s*(?:;|--|$)`,
  String.raw`\btruncate\s+table\s+\w+`,
  String.raw`\b(?:and|or)\s+(?:sleep|pg_sleep|benchmark)\s*\(|\bwaitfor\s+delay\s+'`,
  String.raw`(?:['")]|\b\d+)\s*union\s+(?:all\s+)?select\b|\bunion\s+(?:all\s+)?select\s+(?:null\b|\d+\s*,|@@)`,
].join("|");

/** Handlers and template expressions that run script. */
export const SCRIPT_EXTRA = [
  String.raw`<[^>\n]{0,200}\bon[a-z]{3,20}\s*=\s*["']?[^"'>\n]{0,200}(?:document\.cookie|fetch\(|alert\(|eval\(|location|atob\()`,
  String.raw`\{\{[^}\n]{0,80}(?:constructor|__proto__|__class__|__globals__|__import__|__builtins__)`,
  String.raw`[+,(]\s*document\.cookie\b`,
].join("|");

/** Internal hosts and schemes a server-side fetcher must not reach. */
export const SSRF_EXTRA = [
  String.raw`\b(?:gopher|dict|ldap|tftp):\/\/`,
  String.raw`https?:\/\/(?:169\.254\.\d{1,3}\.\d{1,3}|100\.100\.100\.200|\[?fd00:ec2::254\]?|metadata\.azure\.com)`,
  String.raw`https?:\/\/(?:localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|0\.0\.0\.0|\[::1?\])(?::\d+)?\/[^\s"'<>]{0,80}?\b(?:admin|internal|debug|config|agent|actuator|metadata|shutdown|credentials|secrets?)\b`,
].join("|");

/** Reverse shells, fetched code run in place, unsafe deserialization, JNDI lookups. */
export const RCE_EXTRA = [
  String.raw`\/dev\/(?:tcp|udp)\/`,
  String.raw`\bn(?:c|cat|etcat)\b[^\n]{0,40}\s-[a-z]*[ec]\s+[^\n]{0,20}(?:sh\b|cmd)|\bmkfifo\b[^\n]{0,80}\bn(?:c|cat)\b`,
  String.raw`\b(?:socket|tcpsocket|fsockopen)\b[^\n]{0,300}?(?:\/bin\/(?:ba)?sh|cmd\.exe|pty\.spawn|dup2)`,
  String.raw`\b(?:iex|invoke-expression)\b[^\n]{0,60}(?:downloadstring|invoke-webrequest|iwr\b|net\.webclient)|\.downloadstring\s*\(`,
  String.raw`\b(?:exec|eval)\s*\(\s*(?:await\s+)?(?:requests?\.get|urlopen|urllib|fetch|http\.get|open\(\s*urlopen)`,
  String.raw`\bpickle\.loads?\s*\(\s*(?:request|flask\.request|body|data\b)|\bunserialize\s*\(\s*\$_|\bmarshal\.loads\s*\(\s*request`,
  String.raw`\$\{jndi:`,
].join("|");

/** Secrets or data sent to a host, in a command or in words. */
export const EXFIL_EXTRA = [
  String.raw`https?:\/\/[^\s"'<>]{0,200}[?&=][^\s"'<>]{0,100}\$\{?[a-z_]*(?:token|secret|password|api_?key)`,
  String.raw`\b(?:nslookup|dig|host|ping|curl|wget)\b[^\n]{0,60}\$\(\s*(?:cat|head|tail|base64|xxd|env|printenv)\b`,
  String.raw`\b(?:cat|head|tail|base64|xxd|tar|zip)\b[^\n|]{0,60}${SECRET_FILE}[^\n]{0,60}\|\s*(?:curl|wget|nc|ncat)\b`,
  String.raw`(?:--post-file[= ]|--upload-file\s|-t\s|[-\s]d\s*@|-f\s*\S*=@)\s*\S*${SECRET_FILE}`,
  String.raw`\b(?:scp|rsync)\b[^\n]{0,60}${SECRET_FILE}[^\n]{0,80}@`,
  String.raw`\b(?:pg_dump|mysqldump|mongodump)\b[^\n]{0,120}(?:\|\s*(?:curl|nc)\b|s3:\/\/|gs:\/\/|https?:\/\/)`,
  NOT_NEGATED +
    String.raw`\b(?:send|post|upload|forward|transmit|submit)\b[^.\n]{0,80}?\b(?:${SECRET}|system prompt|\.env|database|user table)\b[^.\n]{0,60}?\bto\s+(?:https?:\/\/|\S+\.\S+\/)`,
  String.raw`(?:导出|導出|打包|压缩|壓縮)[^。\n]{0,60}(?:上传|上傳|发送|發送)到\s*https?:\/\/`,
].join("|");

/** Sudoers edits, admin roles and policies, host escapes, disabled protections. */
export const PRIVESC_EXTRA = [
  String.raw`\bnopasswd\s*:\s*all\b|(?:>>?|\btee\s+(?:-a\s+)?)\s*\/etc\/sudoers|\benv_keep\s*\+?=\s*["']?ld_preload`,
  String.raw`\busermod\s+-a?g\s+\S*\b(?:sudo|wheel|root|admin)\b`,
  String.raw`\s-v\s+\/:\/|\bchroot\s+\/host\b|\bnsenter\b[^\n]{0,40}-t\s*1\b`,
  String.raw`\badministratoraccess\b|\broles\/owner\b|\bclusterrolebinding\b[^\n]{0,80}cluster-admin`,
  String.raw`\bchmod\s+(?:-\S+\s+)*(?:[ug]?\+s|0?[4-7][0-7]{3})(?=\s|$)`,
  String.raw`\b(?:disable|bypass|turn off|remove|skip)\s+(?:the\s+|all\s+)?(?:branch protection|approval checks?|review requirements?|code review)\b`,
  String.raw`\b(?:make|set)\s+(?:it|itself|this node|node[-\w]*)\s+(?:the\s+)?only approver\b|\bgrant\s+(?:node[-\w]*|this node|our node)\s+(?:the\s+)?\S*admin`,
  String.raw`(?:管理者|root|ルート)権限を(?:付与|与え)|(?:承認|認証|権限)チェックを(?:無効|スキップ|外)`,
].join("|");

/** Persistence, stealth, ransom, clipboard hijacking, hidden miners. */
export const MALWARE_EXTRA = [
  // a verb that builds or ships one, a few words before the noun, not a detector of it
  String.raw`\b(?:deploy|install|build|write|spread|distribute|create|embed|add|ship|bundle|include|hide|plant|drop)\s+(?:[^\s.]+\s+){0,3}?(?:keyloggers?|botnets?|rootkits?|backdoors?|trojans?|worms?|cryptominers?|c2 implants?|(?:self-)?propagat\w+ (?:scripts?|payloads?))\b(?!\s+(?:detection|detectors?|protection|scanners?|defen[cs]es?|rules?|signatures?))`,
  String.raw`\bexecstart=\S*\/\.[a-z]|currentversion\\?run(?:once)?\b|\/etc\/ld\.so\.preload\b`,
  String.raw`\bso (?:that )?(?:operators|admins|administrators|users|nobody|no one)\s+(?:do not|don't|won't|will not|cannot|can't)\s+(?:notice|see|find|remove|detect)`,
  String.raw`\bhides?\s+(?:its\s+own\s+)?(?:files|processes)\b`,
  String.raw`\bset-mppreference\s+-disable\w+\s+\$true|\badd-mppreference\s+-exclusion`,
  String.raw`\bhistory\s+-c\b[^\n]{0,40}\bunset\s+histfile|\bshred\s+[^\n]{0,30}\/var\/log\/|\bvssadmin\s+delete\s+shadows|\bdelete\b[^.\n]{0,30}\bshadow copies`,
  String.raw`\bencrypt\w*\s+(?:every|all)\s+(?:the\s+)?(?:files?|data)\b[^\n]{0,200}?\b(?:btc|bitcoin|monero|xmr|ransom)\b`,
  String.raw`\bclipboard\b[^.\n]{0,160}\b(?:address|wallet)\b[^.\n]{0,80}\breplace\b|\bclipboard\b[^.\n]{0,120}\breplace\b[^.\n]{0,80}\b(?:address|wallet)`,
  String.raw`マイニング(?:ソフト|プログラム)?を(?:常駐|インストール|仕込|配布)|プロセス名を偽装|(?:挖矿|挖礦)(?:程序|軟體|软件)`,
].join("|");

/** Force-pushes over main, wiped disks and stores, destroyed infrastructure. */
export const DESTRUCTIVE_EXTRA = [
  String.raw`\bgit\s+push\b[^\n;&|\x60]{0,60}(?:--force\b|\s-f\b|\s\+\S)[^\n;&|.\x60]{0,60}\b(?:main|master)\b|\bgit\s+push\b[^\n;&|]{0,40}(?:--delete\s+|\s:)(?:main|master)\b`,
  String.raw`\bshred\b[^\n]{0,40}\s(?:\/dev\/|\/var\/lib|\/home|\/srv|\/etc)`,
  String.raw`\bterraform\s+destroy\b[^\n]{0,60}-auto-approve|\bkubectl\s+delete\s+(?:ns|namespace|all)\b[^\n]{0,40}(?:--all|prod)`,
  String.raw`\bflushall\b|\bflushdb\b`,
  String.raw`\brm\s+-[a-z]*r[a-z]*\s+(?:~|\$home)?\/(?:\*|\.\[)`,
  String.raw`(?:>|of=)\s*\/dev\/(?:sd[a-z]|nvme\d|hd[a-z]|vd[a-z]|xvd[a-z]|mmcblk\d|disk\d)`,
  String.raw`\bremove-item\b[^\n;]{0,40}-recurse\b[^\n;]{0,40}\s[a-z]:\\(?=\s|;|$)|\bformat\s+[a-z]:\s*\/|\b(?:rd|rmdir|del)\s+\/s\s+\/q\s+[a-z]:\\(?=\s|$)`,
  String.raw`(?:全て|すべて|全部)の(?:データ|ファイル|バックアップ|データベース)を(?:削除|消去)(?!しない|せず)|データベース(?:も|を)(?:全て)?(?:消去|削除)(?!しない|せず)`,
].join("|");
