/**
 * Alternatives the scan patterns gained for attacks written in plain text (scan.ts keeps the shape
 * of seed 004: 14 patterns over 12 categories; each constant here is joined into one of them).
 * They look for an act, not a topic: a command line, a call with untrusted input, a request to send
 * a secret somewhere, so that a proposal that discusses the attack (or ships safe code) still passes.
 * Where one token is not enough they look for the shape of the attack: a secret source and an
 * outbound sink in one command, a shell wired to a socket, a privilege bit being set, a fetched body
 * handed to eval.
 * Every repetition is bounded (`{0,n}` over a class that excludes line breaks, or over `[\s\S]` for
 * the few multi-line code shapes), so no input can make a pattern backtrack for long.
 */

// Secrets a node holds, by name.
const SECRET = String.raw`(?:node[_ -]?secrets?|api[ _-]?(?:tokens?|keys?)|admin[_ -]?tokens?|access[ _-]?tokens?|personal access tokens?|bearer tokens?|passwords?|private keys?|secret keys?|credentials|seed phrases?|session cookies?|environment variables|env vars)`;
// The same as an environment variable name: NODE_SECRET, CREWPLANE_API_TOKEN, DB_PASSWORD.
const SECRET_VAR = String.raw`\b[a-z0-9]+(?:_[a-z0-9]+)*_(?:secret|token|api_?key|password|passwd|private_key|secret_key|access_key)\b`;
// Files that hold credentials.
const SECRET_FILE = String.raw`(?:\.env\b|\.ssh\b|\.aws\b|\.kube\b|\.gnupg\b|\.netrc\b|\.pgpass\b|\.npmrc\b|\.git-credentials\b|\.docker\/config\.json|id_(?:rsa|ed25519|ecdsa)\b|\/etc\/(?:passwd|shadow)\b|credentials\b|\.dev\.vars\b)`;
// Credential stores by path: key and cloud-login files, browser and wallet stores, shell histories.
const CRED_STORE = String.raw`(?:\.ssh(?=[\s'"\/*]|$)|\.gnupg\b|\.aws\/(?:credentials|config)\b|\.azure\b|\.config\/gcloud\b|application_default_credentials\.json|\.kube\/config\b|\.docker\/config\.json|\.config\/gh\/hosts\.yml|\.git-credentials\b|\.netrc\b|\.pgpass\b|\.npmrc\b|\.pypirc\b|\.m2\/settings\.xml|\.terraform\.d\/credentials|\.vault-token\b|\.wrangler\/config|\.dev\.vars\b|\/etc\/shadow\b|wallet\.dat\b|\.ethereum\/keystore|\.bitcoin\b|electrum\/wallets|logins\.json\b|key[34]\.db\b|cookies\.sqlite\b|(?:chrome|chromium|brave|edge)[^\n]{0,60}?[\/\\](?:cookies|login data|web data|local state)\b|local extension settings|login\.keychain|\.(?:bash|zsh|psql|mysql|python|node_repl)_history\b)`;
// Data worth stealing when it leaves in a command: data files, database and backup directories, a home directory.
const DATA_SOURCE = String.raw`(?:\b[\w.-]*\.(?:sqlite3?|db|sql|dump|bak|csv|xlsx?|kdbx)\b|\/var\/lib\/(?:postgresql|mysql|mongodb|redis|crewplane)\b|\/backups?\/|\b(?:customers?|users|accounts|payments|patients|employees|members)[._]\w+|\/etc\/(?:passwd|shadow|group|hostname)\b|[\\\/](?:documents|desktop)[\\\/]|\$env:userprofile|%userprofile%|\bsecrets?\.(?:txt|json|ya?ml|env|csv)\b)`;
// A process environment taken whole (not one variable read from it).
const ENV_WHOLE = String.raw`(?:(?<![\w.$-])(?:printenv|env)(?=\s*\|)|\$\(\s*(?:env|printenv)\s*\)|process\.env\b(?!\s*(?:\.|\[|\?\.))|os\.environ\b(?!\s*(?:\.|\[))|get-childitem\s+env:)`;
const STRONG_SOURCE = String.raw`(?:${SECRET_FILE}|${CRED_STORE}|${ENV_WHOLE}|\/proc\/(?:\d+|self)\/environ\b)`;
// Outside destinations: a URL, an e-mail address, an IP address, a host path, someone's own server.
const EXTERNAL = String.raw`(?:https?:\/\/|[\w.+-]+@[\w-]+\.[\w.-]+|\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}|[\w-]+\.[\w.-]+\/|(?:my|an?|the|our|their)\s+(?:(?:own|personal|private|external|outside|third[- ]party|remote|partner'?s?|shared)\s+)+(?:\S+\s+)?(?:server|host|endpoint|bucket|inbox|e-?mail|address|account|drive|machine|webhook|collector|site|paste|url|dropbox|gist)s?\b)`;
const NOT_NEGATED = String.raw`(?<!\b(?:never|not|don't|dont|n't|no)\s+)`;
// One sentence: a full stop followed by a space ends it, a dot inside a file name or URL does not.
const sentence = (n: number) => String.raw`(?:[^.!?\n]|[.!?](?=\S)){0,${n}}?`;
// A secret named in prose: keys, passwords, tokens, cookies, the mounted secrets directory.
const CRED_OBJ = String.raw`(?:authorization headers?|auth headers?|private[ _-]?keys?|ssh[ _-]?keys?|signing[ _-]?keys?|node\.key\b|[\w-]+\.(?:pem|key)\b|passwords?|passphrases?|(?:api|access|auth|session|bearer|refresh|node|admin|github|oauth|cloud)[ _-]?(?:tokens?|keys?)|\w+_session\b|(?:session|login|auth)[ _-]?cookies?|cookies|credentials|\/run\/secrets\b|\bsecrets\b|seed phrases?|recovery codes?|kubeconfig|cloud sessions?|(?:the\s+)?vault\b|secret\/\S*|${CRED_STORE})`;
// Where a secret must not go: a public or shared log, thread, document or cache; another node; me.
const LEAK_DEST = String.raw`(?:\b(?:in|into|to|on|onto)\s+(?:(?:the|a|an|our|its|their|my)\s+)?(?:[\w'-]+\s+){0,2}?(?:public|shared|ci|build|job'?s?|support|proposal|council|discussion|team'?s?|common|world-readable|github|error|status)\s+(?:\S+\s+)?(?:logs?|output|thread|channel|chat|spreadsheet|sheet|document store|docs?|drive|folder|repo|repository|gist|wiki|page|cache|image|issue|comments?|notes?|paste|bucket|storage)\b|\bto\s+(?:me|us)\b|\bto\s+(?:the\s+|an?\s+)?(?:recovery|support|council|collector|coordinator|analytics|marketing|partner|vendor|third-party|external|outside)\s+(?:node|server|service|team|host|endpoint|collector)\b|\bto\s+(?:[\w.+-]+@[\w-]+\.[\w.-]+|(?:https?:\/\/)?(?!(?:10|127)\.|192\.168\.|172\.(?:1[6-9]|2\d|3[01])\.)\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})|\b(?:in|into|to)\s+(?:the\s+)?(?:readme|wiki|changelog|source code|git history)\b|\bto\s+(?:our|my|the|an?)\s+(?:own\s+)?(?:collector|c2|webhook|paste|gist)\b|\bin\s+(?:plain ?text|clear ?text)\b|\bpublicly\b)`;
const DISCLOSE_VERB = String.raw`(?:shows?|displays?|renders?|reveals?|uploads?|posts?|prints?|pastes?|cop(?:y|ies)|writes?|shares?|publish(?:es)?|sends?|records?|puts?|attach(?:es)?|commits?|push(?:es)?|places?|expos(?:e|es)|logs?|dumps?|echo(?:es)?|includes?|forwards?|e-?mails?|exports?|collects?|gathers?|lists?|enters?|adds?)`;
// A gap of words inside one clause that holds no negation.
const gap = (n: number) => String.raw`(?:(?!\b(?:never|not|don't|dont|no|without)\b)[^.\n]){0,${n}}?`;
// The end of a shell word.
const WORD_END = String.raw`(?=[\s'"\x60);|&]|$)`;
// Addresses a server-side fetcher must not reach: loopback, private ranges, link-local, cluster and metadata names.
const INTERNAL_HOST = String.raw`(?:localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|0\.0\.0\.0|0|10\.\d{1,3}\.\d{1,3}\.\d{1,3}|192\.168\.\d{1,3}\.\d{1,3}|172\.(?:1[6-9]|2\d|3[01])\.\d{1,3}\.\d{1,3}|169\.254\.\d{1,3}\.\d{1,3}|\[(?:::1?|fd[0-9a-f:]*|fe80:[0-9a-f:]*)\]|[a-z0-9.-]*\.(?:internal|localdomain|svc|cluster\.local|consul)|metadata|kubernetes(?:\.default)?(?:\.svc)?|[\w.-]*\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\.(?:nip|sslip|xip)\.io|localtest\.me|lvh\.me)(?=[:\/?#\s"'<>)\]]|$)`;
const SHELL_BIN = String.raw`(?:\/(?:usr\/)?(?:local\/)?s?bin\/)?(?:ba|z|da|k)?sh\b`;

/** Fake turns, a closed or forged proposal envelope, directives aimed at the screening model. */
export const PI_ENVELOPE = [
  // a tag on a line of its own that closes the proposal or opens a system/assistant turn
  String.raw`(?:^|\n)[ \t]*<\s*\/\s*proposal\s*>`,
  String.raw`(?:^|\n)[ \t]*<\s*proposal\b[^>\n]{0,80}\b(?:id|author|from|role)\s*=`,
  String.raw`(?:^|\n)[ \t]*<\s*\/?\s*(?:system|assistant|developer|instructions?|admin|operator)\s*>`,
  // a closing tag followed by a new turn, anywhere on a line
  String.raw`<\s*\/\s*(?:proposal|user|input|document)\s*>\s*<\s*\/?\s*(?:system|assistant|developer|instructions?|admin|operator|proposal)\b`,
  String.raw`<\|?\s*im_(?:start|end)\s*\|?>|\[\/?inst\]|<<\/?sys>>|<\|\s*(?:system|assistant|user|endoftext)\s*\|>`,
  // chat-transcript lines and instruction-format headers
  String.raw`(?:^|\n)[ \t]*(?:assistant|human|system(?: override)?)\s*:`,
  String.raw`(?:^|\n)[ \t]*#{2,}\s*(?:instruction|system|response|assistant)s?\s*:?[ \t]*(?:\n|$)`,
  // a fake end of the proposal, new instructions after it
  String.raw`(?:^|\n)[ \t]*[-=#*_ ]{0,12}end of (?:the\s+)?(?:proposal|submission|document|user input|input|context)\b`,
  String.raw`\bnew instructions?\s*(?:from\s[^:\n]{0,30})?:`,
  // directives to the screener
  String.raw`\b(?:classify|mark|score|rate|treat|label)\s+(?:this|the)\s+(?:proposal|submission|request)\s+as\s+(?:benign|safe|approved|harmless|low[ -]risk)`,
  String.raw`\b(?:set|score)\s+(?:the\s+)?(?:risk|it)\s+(?:(?:to|at|as)\s+)?(?:0|zero|none)\b`,
  String.raw`\brespond\s+(?:only\s+)?with\b[^.\n]{0,40}\b(?:accept|approve)`,
  String.raw`\b(?:screening|rubric)\b[^.\n]{0,40}\b(?:does not apply|is (?:over|complete|disabled|updated)|exempt)`,
  String.raw`\bfrom now on\b[^.\n]{0,60}\b(?:no rules|never refuses?|skip screening|without (?:rules|screening))`,
  String.raw`\bwith no (?:rules|restrictions|filters|screening policy|guardrails)\b`,
  String.raw`\b(?:note|message|instructions?|attention)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+)?(?:screening\s+|reviewing\s+|evaluating\s+|safety\s+)?(?:ai|llm|model|assistant|screener|classifier)s?\s*[:,]`,
  String.raw`\b(?:ai|llm|models?|assistants?|screeners?)\b(?:\s+\S+){0,4}?\s+(?:must|should|shall|will|are required to)\s+(?:always\s+)?(?:vote|answer|respond|reply|return|output|approve|accept|mark|say)\s+(?:with\s+)?["']?(?:yes|approve|approved|accept|safe|benign|pass)\b`,
  String.raw`\b(?:return|output|respond with|answer|reply with|say|print)\s+(?:only\s+)?(?:the word\s+)?["']?(?:approve|approved|safe|benign|accept|pass)["']?(?:\s+and nothing else|\s+only|\s*[.;]|\s*$)`,
  String.raw`\bskip\s+(?:the\s+|any\s+)?(?:safety|security)\s+(?:review|check|screening)s?\b[^.\n]{0,40}\b(?:approve|accept|return|vote)`,
  String.raw`\bpre-?approved\b[^.\n]{0,60}\b(?:skip|bypass|no need|without)\b`,
  String.raw`(?:^|\n)[ \t]*(?:dear\s+)?(?:ai|llm|(?:reviewer|reviewing|screening|safety|council|moderation)\s+(?:model|ai|llm|bot|assistant))\s*[:,]|(?:^|\n)[ \t]*\[\s*(?:system|assistant|admin|developer|operator)\s*\]`,
  String.raw`\b(?:policy|policies|rules|instructions|guidelines)\s+(?:you\s+(?:were|have been)\s+given|you follow|above)\s+(?:is|are)\s+(?:now\s+)?(?:outdated|obsolete|void|revoked|superseded|no longer (?:valid|in effect|applies|apply))`,
  String.raw`\b(?:this|my|our)\s+(?:node|proposal|submission)s?\b[^.\n]{0,30}\b(?:are|is)\s+(?:always|automatically)\s+(?:safe|approved|benign|trusted|exempt)|"verdict"\s*:\s*"(?:approve|approved|safe|benign|accept)"`,
  // 系统：… / システム：…
  String.raw`(?:^|\n)[ \t]*(?:系统|系統|システム)\s*[:：]`,
  String.raw`(?:忽略|无视|無視|忘记|忘記)[^。，,.\n]{0,12}?(?:指令|指示|规则|規則|提示词|提示詞)`,
  String.raw`你现在是[^。\n]{0,10}(?:不受限制|没有限制|无限制|越狱)|你現在是[^。\n]{0,10}(?:不受限制|沒有限制|無限制|越獄)|必须(?:批准|通过|同意)(?:此|这个|本)(?:提案|请求)|必須(?:批准|通過|同意)(?:此|這個|本)(?:提案|請求)`,
  String.raw`(?:審査|レビュー|評価|判定)(?:する|している|担当の?)?(?:ai|モデル|llm)(?:へ|に|の皆様)|必ず[「『"]?(?:承認|可決|安全|approve)[」』"]?と(?:回答|答え|出力|返答)|(?:安全性?|セキュリティ)(?:チェック|審査|確認)は不要`,
].join("|");

/** Interpreter calls that hand untrusted input to a shell; recon commands chained after a separator. */
export const CMD_INTERPRETER = [
  String.raw`\bshell\s*=\s*true\s*[,)]`,
  String.raw`\bos\.(?:system|popen)\s*\(\s*(?:f["']|[^)\n]{0,100}(?:\+|%|\.format|request|argv|input))`,
  String.raw`\bruntime\.getruntime\(\)\.exec\s*\(`,
  String.raw`\b(?:child_process|cp)\.exec(?:sync)?\s*\(\s*(?:` + "`" + String.raw`|[^)\n]{0,100}\+)`,
  String.raw`\b(?:system|exec|passthru|shell_exec|popen|proc_open)\s*\(\s*\$_(?:get|post|request|cookie)`,
  "`" + String.raw`[^\x60\n]{0,80}#\{\s*(?:params|request)`,
  // a call that runs a command with request input concatenated or interpolated into it
  String.raw`\b(?:exec|execsync|spawn|spawnsync|system|popen|shell_exec|passthru|proc_open|check_output|check_call|getoutput|getstatusoutput)\s*\([^)\n]{0,100}?(?:\+|\.|,|\$\{)\s*(?:req|request)\.(?:query|body|params|args|form|get|post|cookies|headers|values|json)\b`,
  String.raw`\b(?:system|exec|passthru|shell_exec|popen|proc_open|eval|assert)\s*\([^)\n]{0,100}\$_(?:get|post|request|cookie|server)\b`,
  String.raw`\b(?:system|exec|spawn|popen|%x)\b[^\n]{0,80}#\{\s*(?:params|request|cookies)`,
  // recon commands after a separator or in a substitution (`;id`, `$(whoami)`, `|| cat /etc/passwd`, `%0a id`)
  String.raw`(?:[;|` +
    "`" +
    String.raw`]|\$\(|&&|%0a)\s*(?:id|whoami)(?=[\s;&|)%` +
    "`" +
    String.raw`'"]|$)|(?:[;|` +
    "`" +
    String.raw`]|\$\(|&&)\s*(?:cat\s+\/etc\/(?:passwd|shadow|hosts)|uname\s+-a\b|touch\s+\/tmp\/)`,
  // shellshock, option injection into git/ssh/tar
  String.raw`\(\)\s*\{\s*:\s*;\s*\}\s*;|--upload-pack[= ]|-o\s*proxycommand\s*=|--checkpoint-action\s*=\s*exec`,
].join("|");

/** Reading credential stores and token caches, or asking for a secret. */
export const CREDENTIAL_READ = [
  String.raw`\.git-credentials\b|\/proc\/(?:\d+|self)\/environ\b|serviceaccount\/token\b|msal_token_cache|\bdump-keychain\b|\bfind-(?:generic|internet)-password\b[^\n]{0,80}\s-\w*[wg]\b`,
  String.raw`\b(?:get-access-token|print-access-token)\b`,
  String.raw`\b(?:cat|type|less|more|head|tail|cp|base64|xxd|strings|get-content)\s+[^\n|;]{0,60}?(?:~\/\.(?:azure|npmrc|docker|kube|netrc|pgpass|config\/gcloud)|\.docker\/config\.json)`,
  // a credential store read, copied or archived
  String.raw`\b(?:cat|type|less|more|head|tail|cp|copy|copies|scp|rsync|tar|zip|7z|base64|xxd|strings|get-content|sqlite3|grep|reads?|reading|collects?|extracts?|exports?|dumps?|decrypts?|uploads?|steals?|grabs?|back up|backs up|backup)\b[^\n;]{0,80}?${CRED_STORE}`,
  // the whole environment printed or written out
  String.raw`(?<![\w.$-])(?:printenv|env)\s*(?:\|[^\n]{0,60}?)?(?:>|\|\s*(?:curl|wget|nc|ncat|base64|tee|xxd|gzip|openssl)\b)|json\.stringify\(\s*process\.env\s*\)|(?:dict|str|repr|json\.dumps|print|pprint)\(\s*(?:dict\(\s*)?os\.environ\s*\)|console\.(?:log|info|debug|error)\(\s*process\.env(?:\s*\)|\.\w*(?:secret|token|key|password)\w*)|print\(\s*os\.environ\[\s*["']\w*(?:secret|token|key|password)`,
  // Windows and macOS credential dumps
  String.raw`sekurlsa::|lsadump::|\bmimikatz(?:\.exe)?\s+["']|\bprocdump(?:64)?(?:\.exe)?\b[^\n]{0,60}\blsass|\bcomsvcs(?:\.dll)?\b[^\n]{0,40}\bminidump|\breg(?:\.exe)?\s+save\s+hklm\\?(?:sam|security|system)\b|ntds\.dit\b|\bkey=clear\b|\blazagne\b|\bsecret-tool\s+lookup\b`,
  // cluster and cloud secret stores dumped
  String.raw`\bkubectl\s+get\s+secrets?\b[^\n]{0,120}(?:\s-a\b|--all-namespaces|@base64d|base64\s+(?:-d|--decode))|\blist-secrets\b[\s\S]{0,200}?\bget-secret-value\b|\bget-secret-value\b[^\n]{0,120}(?:>>|\|\s*(?:tee|curl|nc)\b)`,
  // password guessing against a service
  String.raw`\b(?:hydra|medusa|ncrack|patator|crackmapexec|netexec)\s+(?:-\S+\s+\S+\s+){0,4}?-[pl]\s+\S+`,
  NOT_NEGATED +
    String.raw`\b(?:share|send|reply with|post|paste|give|provide|enter|submit|include|upload|email)\b${gap(30)}\byour\b${gap(30)}\b${SECRET}`,
  NOT_NEGATED +
    String.raw`\b(?:reply|respond|send|share|post|paste|give|provide|submit|include|upload|email|dm|message|tell)\b${gap(60)}\b(?:your|its|their)\b${gap(40)}${SECRET_VAR}`,
  NOT_NEGATED +
    String.raw`\bask\s+(?:\S+\s+){0,3}?for\s+(?:their|your|his|her|its)\s+(?:\S+\s+)?(?:${SECRET}|2fa codes?|otp codes?|recovery codes?)`,
  NOT_NEGATED +
    String.raw`\b(?:collect|gather|harvest|grab|extract|capture|scrape|sniff|intercept)\w*\s+(?:(?!(?:\(?without|no|except|excluding|never|not)\b)\S+\s+){0,3}?(?:passwords?|passphrases?|credentials|api[ _-]?(?:keys?|tokens?)|(?:access|auth|session|bearer|refresh|node|admin|oauth)[ _-]?tokens?|(?:session |browser |auth )?cookies|private[ _-]?keys?|ssh keys?|seed phrases?|2fa codes?|otp codes?|recovery codes?)\b(?!\s+(?:attempts?|resets?|changes?|polic\w+|strength|expir\w+|hash\w*|fields?|rules|requirements|length|prompts?|managers?|leaks?|rotation))`,
  // a sign-in page made to look like the real one that keeps what is typed
  String.raw`\blook(?:s|ing)?\s+(?:exactly\s+|just\s+)?like\s+(?:the\s+|our\s+|a\s+)?(?:real\s+|official\s+|genuine\s+|actual\s+|legitimate\s+)?(?:\S+\s+)?(?:login|log-in|sign-in|signin|sign in|sso)\s+(?:page|form|screen|prompt|portal)\b[^\n]{0,160}?\b(?:stores?|saves?|records?|captures?|logs?|sends?|forwards?|keeps?)\b`,
  NOT_NEGATED +
    String.raw`\b(?:create|build|set up|host|send|launch|deploy|run)\w*\s+(?:a\s+|an\s+|the\s+|our\s+)?(?:\S+\s+)?(?:phishing|credential[- ]harvesting)\s+(?:page|site|form|kit|campaign|e-?mails?|domain)s?\b`,
  // a secret taken somewhere it can be read by others: `uploads its node private key … to the council document store`
  NOT_NEGATED + String.raw`\b${DISCLOSE_VERB}\b${sentence(100)}\b${CRED_OBJ}${sentence(100)}${LEAK_DEST}`,
  String.raw`\b${CRED_OBJ}${sentence(100)}` + NOT_NEGATED + String.raw`\b${DISCLOSE_VERB}\b${sentence(60)}${LEAK_DEST}`,
  String.raw`\b(?:every|each|all)\s+(?:members?|operators?|nodes?|users?|maintainers?)\s+(?:records?|writes?|enters?|adds?|posts?|shares?|lists?|submits?|sends?|pastes?|e-?mails?|uploads?)\s+(?:\S+\s+){0,3}?${CRED_OBJ}`,
  // the whole environment rendered or returned where others read it
  NOT_NEGATED +
    String.raw`\b(?:render|show|display|print|return|send|include|expose|dump|log)\w*\s+(?:the\s+)?(?:whole\s+|full\s+|entire\s+)?(?:process\.env\b(?!\s*(?:\.|\[|\?\.))|os\.environ\b(?!\s*(?:\.|\[)))`,
  // request headers or bodies logged with their cookies and tokens; an endpoint that returns the environment
  NOT_NEGATED +
    String.raw`\blog\w*\s+(?:\S+\s+){0,4}?(?:headers|requests?|bodies|payloads?)\b${sentence(40)}\b(?:including|with|incl\.?)\s+(?:the\s+)?(?:\S+\s+)?(?:cookies|authorization|passwords?|tokens?|secrets|credentials)\b`,
  NOT_NEGATED +
    String.raw`\b(?:returns?|exposes?|shows?|lists?|prints?|dumps?|serves?)\s+(?:all|every|the)\s+(?:\S+\s+)?(?:environment variables|env vars|secrets)\b`,
  // a password for another service asked for; someone else's session replayed; token-printing CLIs
  NOT_NEGATED +
    String.raw`\bask\w*\s+(?:\S+\s+){0,4}?for\s+(?:\S+\s+){0,2}?(?:github|gitlab|google|microsoft|apple|sso|e-?mail|bank|cloud|aws|azure|gcp|cloudflare|npm|slack|discord)\s+(?:account\s+)?(?:passwords?|credentials|logins?|2fa codes?|otp)\b`,
  NOT_NEGATED +
    String.raw`\b(?:reuse|replay|borrow|hijack|clone|steal)\w*\s+(?:the\s+)?(?:\w+'s?|their|users'?|others'?|other nodes'?)\s+(?:\S+\s+)?(?:session(?:s| cookies?| tokens?)?|cookies?|tokens?|logins?|credentials)\b`,
  String.raw`\bgh\s+auth\s+token\b|\bgit\s+credential\s+fill\b|\baws\s+configure\s+(?:export-credentials|get\s+aws_secret_access_key)\b|\bgcloud\s+auth\s+print-identity-token\b`,
  String.raw`(?:パスワード|トークン|秘密鍵|認証情報)[^。\n]{0,20}?(?:平文|そのまま)[^。\n]{0,20}?(?:書き出|出力|記録|保存|送信)(?!せず|しない|しません|禁止)`,
  // the file system searched for key and wallet files
  String.raw`\bfind\s+(?:\/|~|\$home|\/home)\S*\s[^\n]{0,80}-i?name\s+['"]?(?:id_\*|\*\.(?:kdbx|pem|key|p12|pfx|ovpn)|wallet\.dat|\*?\.env|credentials|\*\.keychain\S*)`,
  // a plaintext password logged or written to a file
  String.raw`\b(?:log|logs|logging|print|prints|write|writes|append|appends|save|saves|record|records|dump|dumps|send|sends|console\.log|logger\.\w+|fs\.append\w*|fs\.write\w*)\b[^\n]{0,60}?\b(?:req|request|body|form|params|creds?|credentials|data|args|ctx|input|user|login)(?:\.body)?(?:\.|\[["']?)pass(?:word|wd)?\b`,
  NOT_NEGATED +
    String.raw`\b(?:append|write|log|save|dump|copy|send|record|store)\w*\s[^.\n]{0,60}?\b(?:plain-?text\s+|cleartext\s+|successful\s+|every\s+|each\s+|the\s+)?passwords?\b(?!\s+(?:attempts?|resets?|changes?|polic\w+|strength|expir\w+|hash\w*|fields?|rules|requirements|length|prompts?|managers?))[^.\n]{0,30}?\s(?:to|into|in)\s+(?:\/|~\/|\.\/|[a-z]:\\|\S*\.(?:log|txt|db|dat|csv|p)\b|a (?:hidden|separate|local|text|plain) file)`,
  String.raw`\b(?:replace|patch|modify|swap|backdoor)\w*\s+(?:the\s+)?pam_\w+\.so\b|\bpam_exec\.so\b[^\n]{0,80}\bexpose_authtok\b`,
  // 发送/上传 a token; 窃取/读取所有 … 私钥; 私钥 … 发到我的邮箱
  String.raw`(?:发送|發送|提交|上传|上傳|粘贴|回复)[^。\n]{0,20}(?:令牌|密钥|密鑰|token|密码|密碼|凭证)|(?:令牌|密钥|密鑰|token|密码|密碼)[^。\n]{0,30}(?:发送|發送|上传|上傳)(?:到|给|給)`,
  String.raw`(?:窃取|竊取|盗取|盜取|偷取)[^。\n]{0,12}(?:私钥|私鑰|密钥|密鑰|密码|密碼|凭证|憑證|令牌|助记词|助記詞|cookie)|(?:读取|讀取|获取|獲取|收集|导出|導出|复制|複製|拷贝|汇总|匯總|提取)(?:所有|全部|每个|每個|其他|各)[^。\n]{0,12}(?:私钥|私鑰|密钥|密鑰|密码|密碼|凭证|憑證|令牌|助记词|cookie)|(?:私钥|私鑰|密码|密碼|凭证|憑證|令牌|密钥|密鑰)[^。\n]{0,24}(?:发到|發到|发给|發給|发送到|發送到|上传到|上傳到|寄到)(?:我|外部|http)`,
  String.raw`(?:トークン|シークレット|パスワード|秘密鍵|apiキー)[^。\n]{0,20}(?:送信|送って|貼り付け|共有して)`,
  String.raw`(?:パスワード|認証情報|資格情報|クッキー|cookie|秘密鍵|トークン|apiキー|シークレット)[^。\n]{0,16}?(?:抜き出|抜き取|盗|窃取|抽出|吸い出)`,
  String.raw`(?:各|全|全て|すべて|全部|他の)(?:の)?(?:メンバー|ノード|ユーザー|オペレーター|運用者|端末)?の?[^。\n]{0,10}?(?:秘密鍵|パスワード|トークン|apiキー|認証情報|クッキー|シークレット)を(?:集め|収集|回収|まとめ|コピー|送|共有|提出)`,
].join("|");

/** Stacked statements, unbounded deletes, time-based and error-based probes, query strings built from input. */
export const SQL_STATEMENTS = [
  // stacked on the same line (a migration puts one statement per line)
  String.raw`(?:['"]|\b\d+)[ \t]*\)?[ \t]*;[ \t]*(?:drop|delete|truncate|shutdown|exec|xp_)\w*\b(?!\s+(?:index\s+)?if\s+exists)|(?:['"]|\b\d+)[ \t]*;[ \t]*(?:update|insert)\b`,
  String.raw`\bdelete\s+from\s+[\w."\x60]+\s*(?:;|--|$)`,
  String.raw`\btruncate\s+table\s+\w+`,
  String.raw`\b(?:and|or)\s+(?:sleep|pg_sleep|benchmark)\s*\(|\bwaitfor\s+delay\s+'|\bpg_sleep\s*\(\s*\d|\bdbms_(?:lock\.sleep|pipe\.receive_message)\s*\(`,
  String.raw`(?:['")]|\b\d+)\s*union\s+(?:all\s+)?select\b|\bunion\s+(?:all\s+)?select\s+(?:null\b|\d+\s*,|@@)`,
  // a quote, a condition and a trailing comment: `admin'--`, `' or x=0x61--`, `1' order by 10-- -`
  String.raw`\w'(?:--|#|\/\*)|'\s*--\s*-?\s*(?:$|["\n&])|['"]\s*\)?\s*(?:or|and|order\s+by|\|\|)\s+[^\n]{1,60}?(?:--|#)\s*-?\s*(?:["'\x60]|$|\n)`,
  String.raw`=\s*\d+\s+or\s+(?<sqlnum>\d+)\s*=\s*\k<sqlnum>\b|\bor\s+true\s*(?:--|#)`,
  String.raw`\b(?:extractvalue|updatexml)\s*\(\s*\d|\bconvert\s*\(\s*int\s*,\s*(?:@@version|\(\s*select)|\bload_file\s*\(|\binto\s+(?:outfile|dumpfile)\s+'|\bto\s+program\s+'|\bxp_cmdshell\b`,
  // a query string built from request input
  String.raw`\b(?:select|insert|update|delete)\b[^\n]{0,150}?(?:'\s*["\x60]\s*\+|["\x60]\s*\+\s*(?:req|request|params|user_?input|input)\b|'%s'\s*["']\s*%|\$\{\s*(?:req|request|params|input|body|query)\b)`,
  String.raw`\bf["'][^"'\n]{0,150}?\b(?:select|insert|update|delete)\b[^"'\n]{0,150}?'\{\w+(?:\.\w+)*\}'`,
].join("|");

/** Traversal past a filter, file parameters that name system files, file inclusion from input, symlinks. */
export const PATH_EXTRA = [
  String.raw`\.\.;[\/\\]`,
  String.raw`[?&;](?:file|path|filename|page|template|include|doc|document|name|dir|folder|download|img|image|view|load|read|lang|style|conf|config)=\s*(?:\/etc\/|\/proc\/|\/root\/|\/var\/|\/home\/|[a-z]:\\|\\\\|file:|\.\.)`,
  String.raw`\b(?:include|require)(?:_once)?\s*\(?\s*\$_(?:get|post|request|cookie)`,
  String.raw`\bln\s+-\w*s\w*\s+(?:\/etc\/|\/root\b|\/proc\/|~\/\.ssh|\/home\/\w+\/\.ssh|\/var\/run\/secrets)`,
  String.raw`\.\.[\/\\](?:\.env\b|\.git[\/\\]|\.ssh[\/\\]|etc[\/\\]|windows[\/\\]|wp-config|config\.php|web\.config|\.htpasswd)`,
].join("|");

/** Handlers and template expressions that run script. */
export const SCRIPT_EXTRA = [
  String.raw`<[^>\n]{0,200}\bon[a-z]{3,20}\s*=\s*["']?[^"'>\n]{0,200}(?:document\.cookie|document\.domain|fetch\(|alert\(|prompt\(|confirm\(|eval\(|location|atob\(|import\(|fromcharcode|xmlhttprequest|sendbeacon|new image|javascript:)`,
  String.raw`\{\{[^}\n]{0,80}(?:constructor|__proto__|__class__|__globals__|__import__|__builtins__)`,
  String.raw`[+,(]\s*document\.cookie\b`,
  // javascript: with a tab or newline inside the scheme, in an attribute
  String.raw`\b(?:href|src|action|formaction|data|url)\s*=\s*["']?\s*j\s?a\s?v\s?a\s?s\s?c\s?r\s?i\s?p\s?t\s?:\S`,
  String.raw`<\s*(?:iframe|object|embed)\b[^>\n]{0,200}\b(?:srcdoc\s*=|src\s*=\s*["']?\s*(?:javascript|data):)`,
].join("|");

/** Internal hosts and schemes a server-side fetcher must not reach. */
export const SSRF_EXTRA = [
  String.raw`\b(?:gopher|dict|ldap|tftp|netdoc):\/\/|\bjar:https?:|\bfile:\/\/localhost\/`,
  String.raw`https?:\/\/(?:169\.254\.\d{1,3}\.\d{1,3}|100\.100\.100\.200|\[?fd00:ec2::254\]?|metadata\.azure\.com)`,
  String.raw`https?:\/\/(?:localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|0\.0\.0\.0|\[::1?\])(?::\d+)?\/[^\s"'<>]{0,80}?\b(?:admin|internal|debug|config|agent|actuator|metadata|shutdown|credentials|secrets?)\b`,
  // an internal address with a port of an unauthenticated control plane or data store
  String.raw`https?:\/\/${INTERNAL_HOST}:(?:2375|2376|2379|2380|4001|5984|6379|6443|8200|8500|9200|9300|10250|10255|11211|15672|27017)\b`,
  // an internal address with a path that reads control or secret data
  String.raw`https?:\/\/${INTERNAL_HOST}(?::\d+)?\/[^\s"'<>]{0,80}?\b(?:admin|internal|debug|config|agent|actuator|metadata|meta-data|computemetadata|shutdown|credentials|secrets?|tokens?|containers|pods|_cat|_search|api\/v1\/namespaces|v1\/kv|v2\/keys|server-status|manager)\b`,
  // an internal URL in a field or parameter a server fetches (callback, avatar, feed, ?url=)
  String.raw`\b(?:callback|webhook|avatar|image|img|feed|redirect|return|next|target|proxy|preview|fetch|import|source|homepage|icon|logo|photo|thumbnail|link|remote|origin|upstream)[\w-]*["']?\s*[:=]\s*["']?\s*(?:https?|gopher|dict|ftp|file)?:?\/\/${INTERNAL_HOST}`,
  String.raw`[?&](?:url|uri|u|target|dest|destination|redirect|next|src|feed|image|proxy|link|callback|return|continue|host|site|page)=\s*(?:https?|gopher|dict|file)(?::|%3a)(?:\/\/|%2f%2f)${INTERNAL_HOST}`,
  // an internal URL next to the server-side fetcher that will load it
  String.raw`\b(?:server[- ]side|previews?|previewer|renderer|fetcher|importer|crawler|webhooks?|unfurl\w*|thumbnail\w*|pdf)\b[^\n]{0,120}?https?:\/\/${INTERNAL_HOST}|https?:\/\/${INTERNAL_HOST}[^\n]{0,120}?\b(?:server[- ]side|preview\w*|renderer|fetcher|importer|crawler|unfurl\w*)`,
  NOT_NEGATED +
    String.raw`\b(?:fetch|request|load|proxy|follow|accept|allow)\w*\s+(?:any|arbitrary|whatever|all)\s+(?:\S+\s+){0,2}?(?:urls?|hosts?|addresses)\b(?:[^.\n]{0,80}\b(?:internal|private|localhost|127\.|10\.|192\.168\.|169\.254\.|server[- ]side|raw response|no allow-?list|without (?:an?\s+)?allow-?list))`,
  String.raw`\b(?:fetch|load|request|proxy)\w*\s+whatever\b[^.\n]{0,60}\b(?:url|uri|link|address)\b`,
].join("|");

/** Reverse shells, fetched code run in place, unsafe deserialization, JNDI lookups, download-and-run. */
export const RCE_EXTRA = [
  String.raw`\/dev\/(?:tcp|udp)\/|\/inet\/(?:tcp|udp)\/`,
  String.raw`\bn(?:c|cat|etcat)\b[^\n]{0,40}\s(?:-[a-z]*[ec]|--exec|--sh-exec|--lua-exec)\s+[^\n]{0,20}(?:sh\b|cmd)|\bmkfifo\b[^\n]{0,80}\b(?:n(?:c|cat)|telnet|openssl\s+s_client|socat)\b`,
  String.raw`\b(?:socket|tcpsocket|fsockopen|tcpclient)\b[^\n]{0,300}?(?:\/bin\/(?:ba)?sh|cmd\.exe|pty\.spawn|dup2|\biex\b|invoke-expression|io\.popen|\bpopen\s*\(|\bsystem\s*\()`,
  // a fetched script saved and then run by name; packages from a bare address; fetched binaries started
  String.raw`\b(?:curl|wget)\b[^\n]{0,200}?\/(?<dl>[\w.-]+\.(?:sh|py|pl|rb|ps1))\b[^\n]{0,100}?(?:&&|;|\|\|)\s*(?:sudo\s+)?(?:\S*\/)?(?:(?:ba|z|da)?sh|python[\d.]*|perl|ruby|node|powershell|pwsh|source|\.)\s+(?:-\S+\s+)*(?:\.\/)?\k<dl>\b`,
  String.raw`\b(?:pip\d?|npm|yarn|pnpm|gem|go)\s+(?:install|add|get)\b[^\n]{0,120}(?:https?:\/\/|git\+https?:\/\/|--trusted-host\s+)\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}`,
  String.raw`\.downloadfile\s*\([^\n]{0,200}?(?:start-process|invoke-item|\.exe['"]?\s*\)?\s*;\s*&)|\binvoke-webrequest\b[^\n]{0,200}-outfile\b[^\n]{0,100}?\b(?:start-process|invoke-item)\b`,
  String.raw`\b(?:eval|exec|function|settimeout|setinterval)\s*\(\s*(?:string\s*\(\s*)?(?:req|request|ctx\.request)\.(?:body|query|params|args|form|get_json|json|data|values)\b`,
  String.raw`\b(?:downloads?|fetch(?:es)?|pulls?)\s+and\s+(?:then\s+)?(?:runs?|executes?|evals?|evaluates?|starts?)\s+(?:\S+\s+){0,3}?(?:https?:\/\/|code|scripts?|payloads?|binar(?:y|ies)|executables?|whatever)`,
  String.raw`\bsocat\b[^\n]{0,120}\b(?:exec|system):`,
  // a network tool piped into a shell, or a shell piped into a network tool
  String.raw`\b(?:nc|ncat|netcat|telnet|socat|openssl\s+s_client)\b[^\n|]{0,80}\|\s*${SHELL_BIN}|(?:\b(?:ba|z|da)?sh\s+-i\b|\/bin\/(?:ba|z|da)?sh\b)[^\n]{0,80}\|\s*(?:nc|ncat|netcat|telnet|socat|openssl\s+s_client)\b`,
  // a shell spawned and wired to a socket (Node, Go)
  String.raw`\bspawn\(\s*['"]${SHELL_BIN}[\s\S]{0,300}?\.pipe\(|\bnet\.(?:socket|connect|createconnection)\b[\s\S]{0,300}?\bspawn\(\s*['"]${SHELL_BIN}`,
  String.raw`\bnet\.dial\w*\([\s\S]{0,300}?\bexec\.command\(\s*"${SHELL_BIN}|\bexec\.command\(\s*"${SHELL_BIN}[\s\S]{0,300}?\bnet\.dial`,
  String.raw`\b(?:iex|invoke-expression)\b[^\n]{0,60}(?:downloadstring|invoke-webrequest|iwr\b|net\.webclient)|\.downloadstring\s*\(`,
  String.raw`\b(?:exec|eval)\s*\(\s*(?:await\s+)?(?:requests?\.get|urlopen|urllib|fetch|http\.get|open\(\s*urlopen)`,
  // code fetched over the network handed to eval/exec/Function
  String.raw`\b(?:eval|exec|execfile|function)\s*\(\s*(?:await\s*)?\(?[^\n]{0,100}?\b(?:fetch|requests?\.get|urlopen|urllib|http\.get|httpx\.get|file_get_contents\s*\(\s*['"](?:https?|ftp):|net::http\.get|uri\.open|open\(\s*['"]https?:|invoke-webrequest|downloadstring|curl_exec)`,
  String.raw`\bnew\s+function\s*\(\s*await\b|\bfetch\s*\([\s\S]{0,200}?\bnew\s+function\s*\(|\b(?:urlopen|requests\.get|urllib\.request\.urlopen|http\.get|httpx\.get|axios(?:\.get)?|fetch)\s*\([\s\S]{0,200}?\b(?:exec|eval)\s*\(\s*\w+(?:\.\w+)*\s*\)`,
  String.raw`\b(?:include|require)(?:_once)?\s*\(?\s*['"](?:https?|ftp|data|expect):\/\/`,
  // deserialization of request bodies, sockets and untrusted YAML
  String.raw`\bpickle\.loads?\s*\(\s*(?:request|flask\.request|body|data\b)|\bunserialize\s*\(\s*\$_|\bmarshal\.loads\s*\(\s*request`,
  String.raw`\bpickle\.loads?\s*\([^\n)]{0,60}(?:request|body|payload|recv|socket|params|cookies?)|\bunserialize\s*\([^)\n]{0,60}\$_(?:get|post|cookie|request)|\bjsonpickle\.decode\s*\(\s*request|_\$\$nd_func\$\$_`,
  String.raw`\byaml\.(?:unsafe_load|load)\s*\(\s*(?:request|req|flask\.request|body|data|payload|event|sys\.stdin)\b|\byaml\.load\([^\n)]{0,80}loader\s*=\s*yaml\.(?:unsafe_?)?(?:loader|unsafeloader|fullloader)\b`,
  String.raw`\bobjectinputstream\s*\(\s*(?:socket|request|req|conn|client|sock|in)\b[^\n]{0,80}\.readobject\s*\(|\bbinaryformatter\b[^\n]{0,60}\.deserialize\s*\(|\bxmldecoder\s*\(\s*(?:request|socket)`,
  String.raw`\brender_template_string\s*\([^\n)]{0,40}(?:request|req\b|params|input|f["'])|\b(?:template|from_string)\s*\(\s*(?:request|req)\.`,
  String.raw`\$\{jndi:|\$\{[^\n}]{0,10}\$\{(?:lower|upper|env|sys|date|::-)`,
  // Windows binaries that fetch and run (certutil, bitsadmin, mshta, regsvr32, rundll32)
  String.raw`\bcertutil(?:\.exe)?\b[^\n]{0,40}-urlcache\b|\bbitsadmin(?:\.exe)?\b[^\n]{0,40}\/transfer\b|\bmshta(?:\.exe)?\s+(?:https?:|vbscript:|javascript:)|\bregsvr32(?:\.exe)?\b[^\n]{0,60}\/i:\s*https?:|\brundll32(?:\.exe)?\b[^\n]{0,60}(?:javascript:|https?:)|\bwmic\b[^\n]{0,60}process\s+call\s+create`,
  String.raw`\b(?:powershell|pwsh)(?:\.exe)?\b[^\n]{0,60}\s-(?:e|ec|en|enc|enco|encodedcommand)\s+[a-z0-9+\/=]{20,}`,
  // fetched to a temporary path and run
  String.raw`\b(?:curl|wget)\b[^\n]{0,200}\s(?:-o|--output(?:-document)?)[= ]?\s*['"]?(?:\/tmp|\/var\/tmp|\/dev\/shm)\/[^\n]{0,200}(?:chmod\s+(?:\+x|[0-7]*[157]\b|[ua]\+x)|[;&|]\s*(?:sudo\s+)?${SHELL_BIN}\s|[;&|]\s*(?:\.\/|\/tmp\/|\/var\/tmp\/|\/dev\/shm\/))`,
  String.raw`\b(?:curl|wget)\b[^|\n]{0,200}\|\s*(?:sudo\s+(?:-\S+\s+)*)?(?:\S*\/)?(?:python[\d.]*|perl|ruby|node|php|iex|powershell|pwsh)\b(?!\s+-m\s+json\.tool|\s+-c\s+["']import\s+(?:sys\s*,\s*)?json)`,
  String.raw`\b(?:source|\.|python[\d.]*|perl|ruby|node)\s+<\(\s*(?:curl|wget)\b`,
  String.raw`(?:下载|下載)[^。\n]{0,30}?(?:并|並|然后|然後)?\s*(?:在所有节点上|在所有節點上|直接|立即|自动|自動)[^。\n]{0,10}?(?:运行|運行|执行|執行)|ダウンロードして(?:そのまま|直接|すぐに?)(?:実行|走らせ)|(?:外部|http|\d{1,3}\.\d)[^。\n]{0,30}?ダウンロード[^。\n]{0,20}?(?:そのまま|直接|即)(?:実行|走らせ)`,
].join("|");

/** Secrets or data sent to a host, in a command or in words. */
export const EXFIL_EXTRA = [
  String.raw`https?:\/\/[^\s"'<>]{0,200}[?&=][^\s"'<>]{0,100}\$\{?[a-z_]*(?:token|secret|password|api_?key)`,
  String.raw`\b(?:nslookup|dig|host|ping|curl|wget)\b[^\n]{0,60}\$\(\s*(?:cat|head|tail|base64|xxd|env|printenv)\b`,
  String.raw`\b(?:cat|head|tail|base64|xxd|tar|zip)\b[^\n|]{0,60}${SECRET_FILE}[^\n]{0,60}\|\s*(?:curl|wget|nc|ncat)\b`,
  String.raw`(?:--post-file[= ]|--upload-file\s|-t\s|[-\s]d\s*@|-f\s*\S*=@)\s*\S*(?:${SECRET_FILE}|${CRED_STORE}|${DATA_SOURCE})`,
  String.raw`\b(?:scp|rsync)\b[^\n]{0,60}${SECRET_FILE}[^\n]{0,80}@`,
  String.raw`\b(?:scp|rsync|sftp)\b[^\n]{0,100}?(?:${STRONG_SOURCE}|${DATA_SOURCE}|(?:~|\$home)\/?(?=\s))[^\n]{0,100}?\s\S*@[\w.-]+:`,
  String.raw`\b(?:pg_dump|mysqldump|mongodump)\b[^\n]{0,120}(?:\|\s*(?:curl|nc)\b|s3:\/\/|gs:\/\/|https?:\/\/)`,
  // a secret or data source piped (through filters) into a network client
  String.raw`(?:${STRONG_SOURCE}|${DATA_SOURCE}|\b(?:tar|zip|7z|pg_dump|mysqldump|mongodump|sqlite3)\b)[^\n|;]{0,120}\|(?:[^\n|;]{0,60}\|){0,3}\s*(?:curl|wget|nc|ncat|netcat|socat|telnet|openssl\s+s_client|invoke-(?:webrequest|restmethod)|iwr|irm|ssh\s+\S*@)\b`,
  // a data source and, further on the line, an upload
  String.raw`(?:${STRONG_SOURCE}|${DATA_SOURCE})[^\n]{0,200}?(?:\binvoke-(?:webrequest|restmethod)\b[^\n]{0,100}?-(?:infile|body)\b|\bcurl\b[^\n]{0,100}?\s(?:-t|--upload-file|--data-binary)\s)`,
  // code that posts the environment, a secret file or a data file
  String.raw`\b(?:requests|httpx|session)\.(?:post|put|patch)\s*\([^\n]{0,200}?(?:${STRONG_SOURCE}|${DATA_SOURCE})|\b(?:fetch|axios(?:\.post|\.put)?)\s*\([^\n]{0,200}?(?:process\.env\b(?!\s*(?:\.|\[|\?\.))|document\.cookie)|\burlopen\s*\([^\n]{0,200}?(?:${STRONG_SOURCE})|\binvoke-(?:webrequest|restmethod)\b[^\n]{0,160}?-(?:infile|body)\b[^\n]{0,60}?(?:${STRONG_SOURCE}|${DATA_SOURCE})`,
  String.raw`(?:\.sendbeacon\s*\(|new\s+image\(\)\.src\s*=)[^\n]{0,160}?(?:document\.cookie|localstorage|sessionstorage)`,
  // DNS and ICMP as a channel: data in a subdomain label or a ping pattern
  String.raw`\bfor\s+\w+\s+in\s+\$\([^)\n]{0,100}(?:${STRONG_SOURCE}|${DATA_SOURCE})[^)\n]{0,40}\)[^\n]{0,40}?\bdo\b[^\n]{0,80}?\b(?:dig|nslookup|host|drill|curl|wget|nc|ping)\b`,
  String.raw`\b(?:dig|nslookup|host|drill)\b[^\n]{0,30}\$\{?\w+\}?\.[a-z0-9-]+\.[a-z]|\bping\b[^\n]{0,30}\s-p\s+["']?\$|\b(?:dig|nslookup|host|drill)\b[^\n]{0,30}\$\([^)\n]{0,80}\)\.[a-z0-9-]+\.[a-z]`,
  NOT_NEGATED +
    String.raw`\b(?:send|sends|post|posts|upload|uploads|forward|forwards|transfer|transfers|push|pushes|e-?mail|mail|stream|ship|copy|copies|mirror|mirrors)\b${sentence(40)}\b(?:tables?|database|db|dumps?|backups?|exports?|records|(?:request|access|audit)\s+logs?|(?:request\s+)?bodies|(?:client\s+)?ip addresses|client ips|pii|personal data|user data|customer data|e-?mail addresses|attachments|\.sqlite3?|\.db)\b${sentence(100)}\bto\s+(?:(?:https?:\/\/)?(?!(?:10|127)\.|192\.168\.|172\.(?:1[6-9]|2\d|3[01])\.)\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}|[\w.+-]+@[\w-]+\.[\w.-]+|(?:my|an?|the|their)\s+(?:(?:own|personal|private|external|outside|third[- ]party|partner'?s?)\s+)+\S+)`,
  // personal data published, conversations forwarded to an address
  NOT_NEGATED +
    String.raw`\b(?:publish|release|post|expose|share)\w*\s+(?:\S+\s+){0,3}?(?:e-?mails?|e-?mail addresses|ip addresses|phone numbers|pii|personal data|user data|customer data|members? (?:list|table|data|e-?mails)|home addresses)\b${sentence(80)}\b(?:public|publicly|openly|open data|anyone|our website)\b`,
  NOT_NEGATED +
    String.raw`\b(?:send|forward|copy|mirror|e-?mail)\w*\s+(?:\S+\s+){0,4}?(?:conversations?|votes|private messages|dms|chats?|proposals?)\b${sentence(80)}\bto\s+[\w.+-]+@[\w-]+\.[\w.-]+`,
  // a repository pushed whole to a remote just added
  String.raw`\bgit\s+remote\s+add\s+(?<remote>\S+)\s+\S+[^\n]{0,80}\bgit\s+push\s+\k<remote>\b[^\n]{0,20}(?:--all|--mirror|--tags)`,
  String.raw`\baws\s+s3\s+(?:cp|sync)\b[^\n]{0,160}--acl\s+public-read(?:-write)?\b`,
  // a markdown or HTML image whose query string carries a placeholder or the data itself
  String.raw`!\[[^\]\n]{0,100}\]\(\s*(?:https?:)?\/\/[^)\s]{0,200}?[?&][\w-]{1,20}=(?:\{|<|\$|%7b|%3c|\[|[\w-]{0,40}?(?:summary|secret|token|key|data|prompt|history|transcript|conversation|chat|context|env|cookie|password|memory|message|credential))`,
  String.raw`<img\s[^>\n]{0,100}\bsrc\s*=\s*["']?(?:https?:)?\/\/[^"'\s>]{0,200}?[?&][\w-]{1,20}=(?:\{|\$\{|<)`,
  String.raw`\b(?:url-?encoded|base64(?:-encoded)?)\s+(?:\S+\s+){0,4}?(?:api keys?|tokens?|secrets?|passwords?|credentials|system prompt|conversation|chat history|private data)\b`,
  NOT_NEGATED +
    String.raw`\b(?:send|post|upload|forward|transmit|submit)\b[^.\n]{0,80}?\b(?:${SECRET}|system prompt|\.env|database|user table)\b[^.\n]{0,60}?\bto\s+(?:https?:\/\/|\S+\.\S+\/)`,
  NOT_NEGATED +
    String.raw`\b(?:send|sends|post|posts|upload|uploads|forward|forwards|transmit|submit|email|mail|share|push|pushes|leak|stream)\b[^\n]{0,100}?(?:\b${SECRET}\b|(?<!\w)(?:\.env|\.dev\.vars)\b|${CRED_STORE}|\bsystem prompt\b|\bdatabase\b|\buser table\b)[^\n]{0,80}?\b(?:to|at)\s+(?:[^.\n]{0,30}?\s)?${EXTERNAL}`,
  NOT_NEGATED +
    String.raw`\b(?:send|sends|e-?mail|emails|mail|forward|forwards|post|posts|upload|uploads|copy|copies|transfer|transfers|sync|syncs|mirror|mirrors|export|exports|push|pushes|leak|leaks|share|shares|stream|streams|ship|ships)\b[^.\n]{0,100}?\b(?:customers?'?|users?'?|clients?'?|members?'?|patients?'?|employees?'?|private|confidential|sensitive|internal|personal)\s+(?:\w+\s+)?(?:list|data|records?|tables?|database|db|e-?mails?|pii|details|exports?|dumps?|attachments?|files|documents|information|info|history|proposals?|messages|conversations?|ip addresses)\b[^\n]{0,100}?\b(?:to|at)\s+${EXTERNAL}`,
  // tables, dumps and databases sent to a bare address, an e-mail, a paste or someone's own server
  String.raw`\b(?:tables?|database|db|dump|\.dump|backups?|exports?|records|\.sqlite3?|\.db)\b${sentence(120)}\b(?:send|sends|post|posts|upload|uploads|forward|forwards|transfer|transfers|push|pushes|e-?mail|mail|stream|ship|copy|copies)\b${sentence(80)}\b(?:to|at)\s+(?:the\s+\S+\s+at\s+)?(?:(?:https?:\/\/)?\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}|[\w.+-]+@[\w-]+\.[\w.-]+|(?:my|an?|the|their)\s+(?:(?:own|personal|private|external|outside|third[- ]party|partner'?s?)\s+)+\S+)`,
  String.raw`(?:导出|導出|打包|压缩|壓縮)[^。\n]{0,60}(?:上传|上傳|发送|發送)到\s*https?:\/\/`,
  String.raw`(?:用户|用戶|客户|客戶|会员|會員|个人|個人|环境变量|環境變量|密钥|密鑰|令牌|数据库|數據庫|資料庫)[^。\n]{0,40}?(?:发送到|發送到|上传到|上傳到|发到|發到|传到|傳到|转发到|轉發到)\s*(?:[\w.+-]+@|https?:\/\/|外部|我的|\d)`,
  String.raw`(?:環境変数|apiキー|認証情報|秘密鍵|トークン|パスワード|シークレット|顧客|会員|ユーザー|個人情報|メールアドレス|電話番号|住所|データベース)[^。\n]{0,60}?(?:https?:\/\/\S+|外部|社外|私の|個人の|\d{1,3}(?:\.\d{1,3}){3}|[\w.+-]+@[\w-]+\.[\w.-]+)[^。\n]{0,30}?(?:送信|転送|アップロード|送っ|送る|送り|post|投稿)`,
].join("|");

/** Sudoers edits, admin roles and policies, host escapes, capabilities, disabled protections. */
export const PRIVESC_EXTRA = [
  String.raw`\bnopasswd\s*:\s*all\b|(?:>>?|\btee\s+(?:-a\s+)?)\s*\/etc\/sudoers|\benv_keep\s*\+?=\s*["']?ld_preload`,
  String.raw`\bnopasswd\s*:\s*(?:\S*\/(?:ba|z|da)?sh\b|\S*\/(?:vim?|nano|less|more|find|python[\d.]*|perl|ruby|node|env|tee|cp|mv|chmod|chown|tar|zip|awk|sed|docker|su|dd|git|apt(?:-get)?|yum|pip\d?|npm)\b)`,
  String.raw`\busermod\s+-a?g\s+\S*\b(?:sudo|wheel|root|admin)\b|\b(?:gpasswd\s+-a|adduser)\s+\S+\s+(?:sudo|wheel|admin)\b`,
  String.raw`\s-v\s+\/:\/|\bchroot\s+\/host\b|\bnsenter\b[^\n]{0,40}-t\s*1\b`,
  String.raw`\badministratoraccess\b|\broles\/owner\b|\bclusterrolebinding\b[^\n]{0,80}cluster-admin`,
  String.raw`\bchmod\s+(?:-\S+\s+)*(?:[ug]?\+s|0?[4-7][0-7]{3})(?=\s|$)|\binstall\b[^\n]{0,30}\s-m\s*0?[4-7][0-7]{3}\b`,
  String.raw`\bchmod\s+(?:-\S+\s+)*(?:[0-7]?[0-7][0-7][2367]|[oa]?\+w)\s+\/etc\/(?:passwd|shadow|sudoers|group)\b`,
  String.raw`\b(?:disable|bypass|turn off|remove|skip)\s+(?:the\s+|all\s+)?(?:branch protection|approval checks?|review requirements?|code review|required (?:reviews?|approvals?))\b`,
  NOT_NEGATED + String.raw`\b(?:make\s+(?:\S+\s+){1,3}?setuid\b|set\s+the\s+setuid\s+bit\s+on\b|(?:mark|make)\s+it\s+setuid\b)`,
  String.raw`\b(?:let|allow)\s+(?:my|our|this)\s+(?:node|account|bot)\s+(?:to\s+)?(?:merge|push|deploy|approve|vote|bypass|skip)\b[^.\n]{0,60}\bwithout\b`,
  String.raw`\b(?:give|grant|bind|assign)\w*\s+(?:\S+\s+){0,4}?cluster-admin\b`,
  NOT_NEGATED +
    String.raw`\badd\s+(?:my|our|this)\s+(?:node'?s?\s+|own\s+)?(?:key|account|token|user|node|id)s?\s+to\s+(?:the\s+)?(?:\S+\s+)?(?:admins?|admin_\w+|administrators|owners|approvers|sudoers|wheel|root)\b|\b(?:approve|merge)\s+(?:\S+\s+)?on\s+its\s+own\b`,
  String.raw`\b(?:make|set)\s+(?:it|itself|this node|node[-\w]*)\s+(?:the\s+)?only approver\b|\bgrant\s+(?:node[-\w]*|this node|our node)\s+(?:the\s+)?\S*admin`,
  NOT_NEGATED +
    String.raw`\b(?:give|grant|assign|add|make|promote|elevate|set)\s+(?:my|our|this)\s+(?:own\s+)?(?:node|account|user|bot|agent|key|token)s?\b[^.\n]{0,40}?\b(?:admin(?:istrator)?s?|root|owner|superuser|chair)\b`,
  // capabilities, privileged containers, the Docker socket
  String.raw`\bsetcap\s+['"]?cap_(?:setuid|setgid|sys_admin|sys_ptrace|sys_module|dac_override|dac_read_search|chown|fowner)\b`,
  String.raw`\/var\/run\/docker\.sock\s*:|\bdocker\s+run\b[^\n]{0,120}(?:--privileged|--pid[= ]host|--cap-add[= ](?:sys_admin|all)\b)|\bprivileged\s*:\s*true\b|\bhostpid\s*:\s*true\b|--cap-add[= ](?:sys_admin|all)\b|\b(?:apparmor|seccomp)[=:]unconfined\b`,
  // a uid-0 account, SQL grants and roles, admin flags set in place
  String.raw`:0:0:[^\n]{0,60}>>\s*\/etc\/passwd|>>\s*\/etc\/passwd\b|\buseradd\b[^\n]{0,60}\s-u\s*0\b`,
  String.raw`\bgrant\s+all(?:\s+privileges)?\s+on\s+\*\.\*|\bwith\s+grant\s+option\b|\b(?:alter|create)\s+(?:role|user)\s+\S+\s+(?:with\s+)?superuser\b|\bdisable\s+row\s+level\s+security\b`,
  String.raw`\bupdate\s+\w+\s+set\s+[^;\n]{0,80}\b(?:role|is_admin|isadmin|admin|is_superuser|superuser|access_level)\s*=\s*['"]?(?:admin|root|superuser|owner|true|1)\b`,
  String.raw`"action"\s*:\s*\[?\s*"(?:\*|\*:\*|iam:\*)"`,
  // kernel and Windows escalation, disabled mandatory access control, unsigned tokens
  String.raw`\b(?:run|compile|execute|use|download|launch|build)\w*\b[^.\n]{0,40}\b(?:pwnkit|dirty ?cow|dirty ?pipe|cve-2021-4034|cve-2016-5195|cve-2022-0847|cve-2021-3156|baron samedit|linpeas|juicy ?potato|printspoofer|godpotato|rottenpotato|sweetpotato)\b|\b(?:get|gain|obtain)\s+root\s+(?:on|for|access|privileges|shell)\b`,
  String.raw`\bnet\s+localgroup\s+administrators\b[^\n]{0,60}\/add\b|\bfodhelper(?:\.exe)?\b|\bcomputerdefaults\.exe\b|ms-settings\\?shell\\?open\\?command|\benablelua\b[^\n]{0,40}\/d\s+0`,
  String.raw`\bsetenforce\s+0\b|\bselinux=disabled\b|\baa-teardown\b`,
  String.raw`\ball\s*=\s*\(\s*all(?:\s*:\s*all)?\s*\)\s*(?:nopasswd\s*:\s*)?all\b`,
  String.raw`\bchown\s+(?:-\S+\s+)*(?!root\b)[\w.-]+(?::[\w.-]+)?\s+(?:-\S+\s+)*(?:\S+\s+)*?\/(?:usr\/(?:s?bin|lib\w*|local\/s?bin)|s?bin|etc|lib\w*|boot)\/?(?=\s|$)`,
  String.raw`\b(?:set|make|change|flip|update)\s+(?:the\s+)?(?:is_?admin|admin flag|is_superuser|superuser|role)\b[^.\n]{0,30}?(?:=|\bto\b)\s*["']?(?:1|true|admin|superuser|owner)\b[^.\n]{0,40}\b(?:my|our|this node'?s?)\b`,
  String.raw`\b(?:mint|issue|create|generate|give)\w*\s+(?:my|our|this)\s+(?:node|account|bot|agent)\s+(?:a|an)\s+(?:\S+\s+){0,2}?(?:token|key)\b[^.\n]{0,40}\b(?:admin|root|superuser)\b|\badmin:\*`,
  String.raw`\bmount\s+(?:the\s+host(?:'s)?\s+)?(?:\/|root file ?system|host file ?system)\s+(?:in|into|inside)\b`,
  String.raw`(?<!\b(?:reject|refuse|block|deny|forbid|disallow)\w*\s(?:[^.\n]{0,40}))\balg(?:orithm)?["':\s]{1,4}["']?none\b`,
  String.raw`\bdoas\s+(?:-u\s+root\s+)?(?:${SHELL_BIN}|su\b|-s\b)|\bpkexec\s+${SHELL_BIN}`,
  String.raw`(?:管理者|root|ルート)権限を(?:付与|与え)|(?:承認|認証|権限)チェックを(?:無効|スキップ|外)`,
  String.raw`(?:管理者|root|ルート|特権|admin)(?:権限|ロール)を[^。\n]{0,10}?(?:付与|与え|割り当て|割当|追加)|パスワードなしで(?:sudo|root)|sudo\s*を?\s*パスワードなし`,
  String.raw`(?:加入|添加到|加到)(?:管理员|管理員|root|sudo|wheel|admin)(?:组|組)|(?:赋予|賦予|授予|给予|給予|提升为|提升到)[^。\n]{0,8}(?:root|管理员|管理員|超级用户|超級用戶)`,
].join("|");

/** Persistence, stealth, ransom, keyloggers, miners, worms, poisoned packages. */
export const MALWARE_EXTRA = [
  // a verb that builds or ships one, a few words before the noun, not a detector of it
  NOT_NEGATED +
    String.raw`\b(?:deploy|install|build|write|spread|distribute|create|embed|add|ship|bundle|include|hide|plant|drop)\s+(?:[^\s.]+\s+){0,4}?(?:keyloggers?|botnets?|rootkits?|backdoors?|trojans?|worms?|cryptominers?|c2 implants?|reverse[ -]shells?|bind[ -]shells?|web ?shells?|(?:self-)?propagat\w+ (?:scripts?|payloads?))\b(?!\s+(?:detection|detectors?|protection|scanners?|defen[cs]es?|rules?|signatures?))`,
  String.raw`\bexecstart=\S*\/\.[a-z]|\bexecstart=\s*\S*(?:\/tmp\/|\/var\/tmp\/|\/dev\/shm\/)|currentversion\\?run(?:once)?\b|\/etc\/ld\.so\.preload\b`,
  String.raw`\bso (?:that )?(?:operators|admins|administrators|users|nobody|no one)\s+(?:do not|don't|won't|will not|cannot|can't)\s+(?:notice|see|find|remove|detect)`,
  String.raw`\bhides?\s+(?:its\s+own\s+)?(?:files|processes)\b|\bhid(?:e|es|ing)\s+(?:\S+\s+){0,3}?(?:pids?|process(?:es)?|files?|connections?|itself)\b[^.\n]{0,30}\bfrom\s+(?:ps|ls|top|netstat|lsof|the (?:operators?|admins?|users?)|operators|admins|users)\b`,
  // concealment from review and from the process list
  String.raw`\b(?:do not|don't|never)\s+(?:mention|document|disclose|tell|list|show)\s+(?:it|this|them)\s+(?:in|to)\s+(?:the\s+)?(?:changelog|release notes|docs|documentation|reviewers?|operators|users|anyone|council)\b|\bblends?\s+in\b|\brename\s+(?:\S+\s+){0,3}?process(?:es)?\s+(?:name\s+)?(?:to|as)\b|\bso (?:that )?(?:it|they)\s+(?:does not|doesn't|do not|don't|won't|will not)\s+(?:show up|appear|get noticed|look unusual)|\bwithout\s+(?:logging|leaving)\s+(?:anything|a trace|any trace)|\bwithout\s+(?:telling|notifying|informing|alerting)\s+(?:the\s+)?(?:operators?|users?|admins?|anyone|council|owners?)\b|\bdisguis\w+\s+(?:it\s+|itself\s+)?as\s+(?:a\s+)?(?:kernel|system)`,
  String.raw`\bset-mppreference\s+-disable\w+\s+\$true|\badd-mppreference\s+-exclusion`,
  String.raw`\bhistory\s+-c\b[^\n]{0,40}\bunset\s+histfile|\bshred\s+[^\n]{0,30}\/var\/log\/|\bvssadmin\s+delete\s+shadows|\bdelete\b[^.\n]{0,30}\bshadow copies`,
  String.raw`\bsystemctl\s+(?:stop|disable|mask)\b[^\n]{0,40}\b(?:falcon-sensor|auditd|crowdstrike|sentinel\w*|osqueryd|wazuh\w*|ossec|clamav\w*|sysmon|fail2ban)\b`,
  // ransomware: files encrypted in a loop and the originals removed, or a ransom asked
  String.raw`\bencrypt\w*\s+(?:every|all)\s+(?:the\s+)?(?:files?|data)\b[^\n]{0,200}?\b(?:btc|bitcoin|monero|xmr|ransom)\b`,
  String.raw`(?:\bopenssl\s+enc\b|\bgpg\s+(?:--symmetric|-c)\b|\bfernet\([^)\n]{0,40}\)\.encrypt\(|\baes\.new\()[\s\S]{0,200}?(?:\brm\s|\bos\.(?:remove|unlink)\(|\bunlink\(|\bshred\b)`,
  String.raw`\breadme_(?:decrypt|restore|recover)\w*|\b(?:pay|send)\s+(?:\S+\s+){0,3}?\d*(?:\.\d+)?\s*(?:btc|bitcoin|monero|xmr)\b[^.\n]{0,60}\b(?:decrypt|restore|unlock|get (?:the|your) files)|\b(?:asking|demanding|demand)\s+(?:for\s+)?\d*(?:\.\d+)?\s*(?:btc|bitcoin|monero|xmr)\b`,
  String.raw`\bclipboard\b[^.\n]{0,160}\b(?:address|wallet)\b[^.\n]{0,80}\breplace\b|\bclipboard\b[^.\n]{0,120}\breplace\b[^.\n]{0,80}\b(?:address|wallet)`,
  // keystrokes recorded and sent
  String.raw`(?<!\b(?:detect|block|prevent|stop|flag|find|catch)\w*\s(?:\S+\s+){0,3})\b(?:records?|recording|logs?|logging|captures?|capturing|collects?|collecting|sends?|sending|uploads?|steals?|sniff\w*|hooks?)\s+(?:all\s+|every\s+|each\s+|the\s+)?(?:\S+\s+){0,2}?(?:keystrokes?|key ?presses|keypresses|keyboard input|typed (?:text|passwords?))\b`,
  String.raw`\b(?:every|all|each)\s+(?:key|keystroke|keypress|character)s?\s+(?:that\s+)?(?:the\s+|an?\s+)?(?:\S+\s+)?(?:types?|typed|press(?:es)?|pressed|enters?|entered)\b[^.\n]{0,80}\b(?:sends?|uploads?|logs?|records?|forwards?|posts?|stores?|saves?)\b`,
  String.raw`\bpynput\.keyboard\b|\bkeyboard\.(?:on_press|hook)\b|\bsetwindowshookex\w*\s*\(\s*wh_keyboard|\bwh_keyboard_ll\b|\bgetasynckeystate\b|\baddeventlistener\(\s*['"]key(?:down|press|up)['"][^\n]{0,120}(?:fetch\(|xmlhttprequest|sendbeacon|new image|\.src\s*=)`,
  // planted keys and start-up lines, uid-0 accounts, scheduled tasks at logon
  String.raw`\becho\s+['"]?(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2)[^\n]{0,600}>>\s*\S*authorized_keys`,
  String.raw`\becho\s+[^\n]{0,200}(?:nohup|curl|wget|\bnc\b|\/tmp\/|\/var\/tmp\/|\/dev\/shm|base64|\/dev\/tcp)[^\n]{0,200}>>\s*\S*(?:\.bashrc|\.bash_profile|\.profile|\.zshrc|rc\.local|\/etc\/crontab|cron\.d\/\S*)`,
  String.raw`@reboot\s+[^\n]{0,80}(?:\/tmp\/|\/dev\/shm|\/\.[a-z]|curl|wget|\bnc\b)`,
  String.raw`(?:\/\.[a-z][\w.-]*|\/tmp\/|\/dev\/shm\/)${sentence(60)}\b(?:at|on)\s+(?:every\s+)?(?:login|logon|boot|startup|reboot)\b|\blaunch(?:agents|daemons)\b[^\n]{0,120}(?:\/\.[a-z]|\/tmp\/|\/users\/shared\/)`,
  NOT_NEGATED +
    String.raw`\bdownload\w*\s+(?:a|an|the|our)\s+(?:\S+\s+)?(?:binary|executable|script|payload|file)\b(?:(?!\b(?:verif\w*|checksums?|signatures?|signed)\b)(?:[^.!?\n]|[.!?](?=\S))){0,80}?\b(?:runs?|executes?|starts?|launch\w*)\s+it\b`,
  String.raw`\buseradd\b[^\n]{0,60}\s-o\b[^\n]{0,30}\s-u\s*0\b`,
  String.raw`\bschtasks\b[^\n]{0,120}\/create\b[^\n]{0,200}(?:\/sc\s+(?:onlogon|onstart)|\/ru\s+["']?system\b)`,
  // a master password that works for every account
  String.raw`\baccept\w*\s+(?:the\s+)?(?:password|passphrase|token|key)\s+\S+\s+(?:for|from|on)\s+(?:any|every|all)\s+(?:users?|accounts?|nodes?)\b|\b(?:hard-?coded|hidden|secret|universal|master|magic)\s+(?:admin\s+)?(?:password|passphrase|login)\b[^.\n]{0,60}\b(?:any|every|all)\s+(?:users?|accounts?)\b`,
  // hidden routes that run commands, loaders added to shipped code, self-installing code
  String.raw`\b(?:hidden|secret|undocumented)\s+(?:\S+\s+)?(?:route|endpoint|api|url|path|handler|page|account|user|login)\b${sentence(120)}\b(?:execut\w*|runs?|eval\w*|shell|command|bypass\w*)\b`,
  String.raw`\b(?:takes?|accepts?|reads?)\s+(?:an?\s+|the\s+)?[\x60'"]?(?:cmd|command|exec|shell)[\x60'"]?\s+(?:query\s+)?(?:param(?:eter)?|field|argument|header)\b[^.\n]{0,60}\b(?:execut\w*|runs?\b|eval\w*)`,
  String.raw`\b(?:leave|keep)\s+(?:it|this|them)\s+out\s+of\s+(?:the\s+)?(?:\S+\s+)?(?:docs|documentation|changelog|release notes|review|audit log)\b`,
  String.raw`\b(?:append|inject|insert|add)\w*\s+(?:a\s+|an\s+|some\s+|our\s+)?(?:small\s+|tiny\s+|hidden\s+)?(?:loader|payload|snippet|stub|dropper|beacon)\s+(?:\S+\s+){0,3}?(?:to|into)\s+(?:the\s+)?(?:\S*dist\/|\S*build\/|release|bundle|binary|artifact|package|installer|update)`,
  String.raw`\binstall(?:s|ing)?\s+itself\b|\btry\s+(?:the\s+)?(?:\S+\s+)?(?:keys|passwords|credentials|logins)\s+(?:on|against)\s+(?:each|every|all|other)\b`,
  String.raw`\b(?:run|runs|execute|executes)\s+(?:any|every|all|whatever)\s+(?:\S+\s+){0,2}?(?:shell\s+)?commands?\s+(?:the\s+|a\s+|our\s+)?(?:remote\s+)?(?:server|host|controller|c2|master|endpoint)\s+(?:returns?|sends?|gives?|serves?)`,
  // encrypted and originals deleted, a key sold back
  String.raw`\bencrypt\w*\s+(?:all|every|the)\s+(?:\S+\s+){0,6}?(?:files?|data|disks?|volumes?|databases?)\b[^.\n]{0,120}\b(?:delete|remove|wipe|shred)\w*\s+(?:the\s+|all\s+)?originals?|\b(?:buy|purchase|pay for)\s+(?:the\s+)?(?:decryption\s+)?key\b`,
  // an official build swapped for one's own, code that re-enables or adds itself, swapped payout addresses, pay-to-unlock
  String.raw`\breplace\s+(?:the\s+)?(?:official|released|published|signed)\s+(?:\S+\s+)?(?:binary|package|release|installer|image|build)\b${sentence(60)}\bwith\s+(?:our|my|a)\s+(?:own\s+|modified\s+|patched\s+)?(?:build|version|binary|copy)\b`,
  String.raw`\b(?:re-?enables?|re-?installs?|restarts?|respawns?|re-?creates?)\s+itself\s+(?:if|when|after)\b|\b(?:adds?|pushes|writes|injects?|commits?)\s+itself\s+(?:to|into|onto)\s+(?:any|every|all|each|other)\b`,
  String.raw`\b(?:swap|replace|substitute|change)\w*\s+(?:\S+\s+){0,4}?(?:wallet|payout|payment|recipient|bitcoin|btc|eth)\s+address(?:es)?\s+(?:\S+\s+){0,4}?(?:with|for|to)\s+(?:ours|our own|mine|my own|our|my|the attacker'?s?)\b`,
  String.raw`\buntil\s+(?:they|the\s+\w+|operators?|users?|owners?|members?)\s+pays?\b`,
  String.raw`(?:受け取った|受信した|送られてきた|指示された)(?:コマンド|命令)を(?:実行|走らせ)|(?:门罗币|門羅幣|比特币|比特幣|以太坊|加密货币|加密貨幣)(?:挖矿|挖礦)|(?:挖矿|挖礦)[^。\n]{0,20}?(?:钱包|錢包|收益)|悄悄(?:地)?[^。\n]{0,20}?(?:上传|上傳|发送|發送|安装|安裝|植入|收集|复制|複製)`,
  // miners
  String.raw`\bstratum\+(?:tcp|ssl|tls)?:\/\/|\b(?:minerd|cpuminer|cgminer|bfgminer|nbminer|t-rex|xmr-stak\S*|ethminer|phoenixminer|lolminer|nicehash\w*)\b|--donate-level\b|\bcryptonight\b|\bminers?\b[^.\n]{0,80}\b(?:idle|low priority|nice -n|background|proceeds|wallet|pool)\b`,
  NOT_NEGATED + String.raw`\bmine\s+(?:monero|xmr|bitcoin|btc|ethereum|eth|crypto(?:currency|currencies)?|coins)\b`,
  // poisoned packages: install hooks that fetch or eval, typosquats, dependency confusion
  String.raw`"(?:pre|post)?install"\s*:\s*"[^\n]{0,300}?(?:curl|wget|node\s+-e|\beval\b|https?:|\|\s*(?:ba)?sh|base64|powershell)`,
  String.raw`\b(?:so|because)\s+(?:that\s+)?typos\b|\bdependency confusion\b|\bsetup\.py\b[^.\n]{0,80}\b(?:sends?|uploads?|posts?|exfiltrat\w*|collects?)\b`,
  String.raw`\b(?:register|publish|upload)\w*\s+[^\n]{0,60}?\b(?:on|to)\s+(?:the\s+)?public\s+(?:npm|pypi|registry|package|crates|rubygems)[^\n]{0,100}?\b(?:instead of|over|shadow\w*|picks?|resolv\w*)\b[^\n]{0,60}?\b(?:private|internal)\b`,
  // botnets and floods, self-propagation
  String.raw`\b(?:run|runs|execute|executes)\s+(?:any|every|all|whatever)\b[^.\n]{0,80}\bas\s+(?:a\s+)?(?:shell|system|os)\s+commands?\b|\b(?:connect|beacon|report|check in|phone home|poll)\w*\s+(?:back\s+)?(?:to\s+)?(?:our\s+|the\s+|a\s+)?(?:c2|c&c|command[- ]and[- ]control)\b|\bconnects?\s+back\s+to\b`,
  String.raw`\bhping3?\b[^\n]{0,40}--flood|\b(?:slowloris|loic|hoic)\b|\b(?:syn|udp|http|icmp)\s+flood\b(?!\s+(?:protection|mitigation|detection|defen))|\bflood\s+(?:the\s+)?(?:target|victim|competitor|\d{1,3}\.\d)`,
  String.raw`\bcop(?:y|ies)\s+itself\b|\breplicat\w*\s+itself\b|\bspread(?:s|ing)?\s+(?:itself\s+)?to\s+(?:every|all|other|each)\s+(?:hosts?|nodes?|machines?|servers?)\b|\bscp\s+["']?(?:\$0|\$\{0\}|__file__|\$myinvocation)|\bfor\s+\w+\s+in\s+\$\([^)\n]{0,60}known_hosts`,
  String.raw`マイニング(?:ソフト|プログラム)?を(?:常駐|インストール|仕込|配布)|プロセス名を偽装|(?:挖矿|挖礦)(?:程序|軟體|软件)`,
  String.raw`(?:キー入力|打鍵|キーストローク)[^。\n]{0,10}?(?:記録|送信|収集|盗)|こっそり(?:と)?(?:入れ|仕込|インストール|導入|実行|送信)|(?:気づかれ|バレ)ないように|偷偷(?:地)?(?:安装|安裝|植入|运行|運行|上传|上傳|发送|發送)|不让(?:用户|运营者|管理员)(?:发现|知道)|(?:记录|記錄)(?:键盘|鍵盤|按键|按鍵)|(?:连接到|連接到|连到|連到)[^。\n]{0,30}?(?:接收|获取|獲取|拉取)(?:指令|命令)|隐藏的?(?:后台|後台)?(?:程序|进程|進程)[^。\n]{0,20}(?:开机自启|開機自啟|自启动|自啟動)`,
  String.raw`(?:ワーム|キーロガー|バックドア|ランサムウェア|マルウェア|トロイの木馬|ルートキット|ボットネット|ウイルス|マイナー)(?:を|も)[^。\n]{0,10}?(?:仕込|設置|配布|作成|作っ|作る|インストール|埋め込|組み込|拡散|感染|導入|配置|送り込)|感染を(?:広げ|拡大)`,
  String.raw`(?:安装|安裝|部署|植入|传播|傳播|编写|編寫|写一个|寫一個|开发|開發|分发|分發|投放|嵌入)[^。\n]{0,12}?(?<![防反杀殺查])(?:恶意软件|惡意軟體|病毒|蠕虫|蠕蟲|木马|木馬|后门|後門|键盘记录|鍵盤記錄|勒索软件|勒索軟體|僵尸网络|殭屍網路|远控|遠控|rootkit)`,
].join("|");

/** Force-pushes over main, wiped disks, stores and clouds, destroyed infrastructure, dropped tables. */
export const DESTRUCTIVE_EXTRA = [
  String.raw`\bgit\s+push\b[^\n;&|\x60]{0,60}(?:--force\b|\s-f\b|\s\+\S)[^\n;&|.\x60]{0,60}\b(?:main|master)\b|\bgit\s+push\b[^\n;&|]{0,40}(?:--delete\s+|\s:)(?:refs\/heads\/)?(?:main|master)\b`,
  String.raw`\bshred\b[^\n]{0,40}\s(?:\/dev\/|\/var\/lib|\/home|\/srv|\/etc)`,
  String.raw`\bterraform\s+(?:destroy|apply\s+-destroy)\b[^\n]{0,60}-auto-approve|\bkubectl\s+delete\s+(?:ns|namespace|all)\b[^\n]{0,40}(?:--all|prod)`,
  String.raw`\bkubectl\s+delete\s+(?:pvc|pv|persistentvolumeclaims?|persistentvolumes?|deployments?|statefulsets?|secrets?|nodes?)\b[^\n]{0,40}(?:--all\b|\bprod\w*|\bkube-system)`,
  String.raw`\bflushall\b|\bflushdb\b`,
  String.raw`\brm\s+-[a-z]*r[a-z]*\s+(?:~|\$home)?\/(?:\*|\.\[)`,
  // rm -r on a database, backup or home directory, or on the repository's history
  String.raw`\brm\s+(?=(?:-[a-z-]*\s+)*(?:-[a-z]*r|--recursive\b))(?:-[a-z-]*\s+)+['"]?(?:\/var\/lib\/(?:postgresql|mysql|mongodb|redis|docker|etcd|elasticsearch|crewplane)(?:\/\S*)?|(?:\/var\/(?:backups|www|mail|log)|\/srv|\/data|\/backups?|\/mnt|\/home(?:\/\w+)?|~|\$home)\/?\*?${WORD_END}|\.git${WORD_END})`,
  String.raw`\bfind\s+(?:\/|~|\$home|\/home|\/srv|\/var|\/etc|\/usr|[a-z]:\\)(?=\s)[^\n|;]{0,100}(?:-delete\b|-exec\s+(?:rm|shred)\b)`,
  String.raw`(?:>|of=)\s*\/dev\/(?:sd[a-z]|nvme\d|hd[a-z]|vd[a-z]|xvd[a-z]|mmcblk\d|disk\d)`,
  String.raw`\b(?:wipefs\s+(?:-\S+\s+)*(?:-a|--all)|sgdisk\s+(?:-\S+\s+)*(?:--zap-all|-z)|blkdiscard|hdparm\b[^\n]{0,40}--security-erase)\b[^\n]{0,40}\/dev\/|\blvremove\s+-f|\b(?:vgremove|pvremove)\b|\bzfs\s+destroy\s+-r|\bzpool\s+destroy\b`,
  // Windows: recursive deletes of a drive root or of Users/Windows, formats, free-space wipes
  String.raw`\bremove-item\b[^\n;]{0,40}-recurse\b[^\n;]{0,40}\s[a-z]:\\(?=\s|;|$)|\bformat\s+[a-z]:\s*\/|\b(?:rd|rmdir|del)\s+\/s\s+\/q\s+[a-z]:\\(?=\s|$)`,
  String.raw`\bremove-item\b(?=[^\n;]{0,80}-recurse)(?=[^\n;]{0,80}\s['"]?[a-z]:\\(?:users|windows|program files|programdata)?\\?['"]?(?=[\s;]|$))|\bdel\s+(?:\/[a-z]\s+)*[a-z]:\\(?:\*|\s|$)|\bcipher\s+\/w:|\bdiskpart\b[^\n]{0,60}\bclean\b|\bwbadmin\s+delete\b`,
  // cloud and data stores deleted without a way back
  String.raw`\baws\s+s3\s+rm\b[^\n]{0,100}--recursive|\baws\s+s3\s+rb\b[^\n]{0,60}--force|\baws\s+rds\s+delete-db-(?:instance|cluster)\b[^\n]{0,150}--skip-final-snapshot|\bgcloud\s+(?:projects|sql\s+instances|container\s+clusters)\s+delete\b|\baz\s+(?:group|sql\s+db|storage\s+account)\s+delete\b|\bgsutil\s+(?:-m\s+)?(?:rm\s+-r|rb)\b`,
  String.raw`\.dropdatabase\(\)|\bdb\.\w+\.drop\(\)|\.deletemany\(\s*\{\s*\}\s*\)|\bdropdb\s+(?:-\S+\s+)*\w`,
  // DROP TABLE as a statement (IF EXISTS is a migration's), deletes with a tautology
  String.raw`\bdrop\s+table\s+(?!if\s+exists\b)(?:[\w."\x60]+\s*,\s*)*[\w."\x60]+\s*(?:cascade\b|;|$)`,
  String.raw`\b(?:delete\s+from|update)\s+[\w."\x60]+\s+(?:set\s+[^;\n]{0,80}\s)?where\s+(?:1\s*=\s*1|true|'1'\s*=\s*'1')\b`,
  String.raw`\bfind\s+\/var\/log\/?\s[^\n]{0,80}(?:-delete\b|-exec\s+(?:rm|truncate|shred)\b)|\bcrontab\s+(?:-\S+\s+)*-r\b|\btruncate\s+(?:-\S+\s+)*-s\s*0\s+\S*(?:backups?|\.sql|\.db\b|\/var\/lib)|\bkill\s+-(?:9|kill|s\s+kill)\s+-1\b`,
  String.raw`\bchmod\s+(?:(?:-\w*r\w*|--recursive)\s+(?:-\S+\s+)*0*[0-7]{1,3}|0*[0-7]{1,3}\s+(?:-\S+\s+)*(?:-\w*r\w*|--recursive))\s+\/(?=\s|$)|\bchown\s+-r\w*\s+\S+\s+\/(?=\s|$)`,
  String.raw`(?:全て|すべて|全部)の(?:データ|ファイル|バックアップ|データベース)を(?:削除|消去)(?!しない|せず)|データベース(?:も|を)(?:全て)?(?:消去|削除)(?!しない|せず)`,
  String.raw`(?:本番|全ての|すべての|全部の|全)(?:環境の)?(?:データベース|db|テーブル|データ|ファイル|バックアップ|ディスク|サーバー)[^。\n]{0,12}?(?:を|も)(?:全部|全て|すべて|完全に)?(?:削除|消去|消し|消す|破棄|初期化|フォーマット|ドロップ)(?!しない|せず|しません|されない|を防)|(?:データベース|db|テーブル|データ|ファイル|バックアップ|ディスク)(?:を|も)(?:全部|全て|すべて|完全に)(?:削除|消去|消し|消す|破棄|初期化|フォーマット)(?!しない|せず|しません|されない)`,
  String.raw`(?:清空|销毁|銷毀|格式化|擦除)[^。\n]{0,6}?(?:数据库|數據庫|資料庫|数据|數據|备份|備份|磁盘|磁碟|服务器|伺服器)|(?:删除|刪除|清除)(?:掉)?(?:所有|全部|整个|整個)(?:的)?[^。\n]{0,6}?(?:数据库|數據庫|資料庫|数据|數據|备份|備份|表|文件|檔案)|(?:删除|刪除)(?:掉)?(?:生产|生產|线上|線上)(?:环境|環境)?(?:的)?(?:数据库|數據庫|資料庫|数据|數據|备份|備份)`,
  NOT_NEGATED +
    String.raw`\b(?:wipe|erase|delete|destroy|purge|nuke|drop|truncate|empty|clear)\s+(?:all\s+(?:of\s+)?)?(?:the\s+)?(?:production|prod|live|primary)\s+(?:\w+\s+)?(?:database|db|cluster|data|bucket|tables?|backups?|servers?)\b|` +
    NOT_NEGATED +
    String.raw`\b(?:wipe|erase|delete|destroy|purge|nuke|truncate|drop|empty)\s+(?:all|every|each)\s+(?:of\s+)?(?:the\s+)?(?:\w+\s+)?(?:backups?|snapshots?|databases?|tables?|volumes?|disks?|records|repositor(?:y|ies)|buckets?)\b(?!\s+(?:older|that|which|except|not|more than|beyond|from (?:before|the cache)))(?![^.\n]{0,30}\b(?:tests?|testing|staging|local|dev|development|fixtures?|sandbox|temp|tmp|preview)\b)`,
  String.raw`\bdocker\s+(?:volume\s+rm|rm\s+(?:-\S+\s+)*)\s*\$\(\s*docker\s+(?:volume\s+ls|ps)\b[^)\n]{0,20}-q|\bdocker\s+system\s+prune\b[^\n]{0,40}--volumes`,
  String.raw`\b(?:rd|rmdir|del)\s+(?:\/[a-z]\s+)*[a-z]:\\(?:windows|users|program files|programdata)|\brm\s+-rf\s+(?:整个|整個|全部|所有)|(?:ディスク|ドライブ|ボリューム)(?:を|も)(?:完全に)?(?:フォーマット|初期化)(?!しない|せず)`,
].join("|");
