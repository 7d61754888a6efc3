/**
 * Standard five-field cron (minute hour day-of-month month day-of-week), always in UTC, pure.
 * Each field takes `*`, a value, a range `a-b`, comma lists of these, and a step `/s` after `*`, a
 * range or a value (`a/s` runs from a to the field's end); months and weekdays also by name (`JAN`,
 * `MON`), and weekday 7 is Sunday as 0 is. The macros `@yearly`, `@annually`, `@monthly`, `@weekly`,
 * `@daily`, `@midnight` and `@hourly` stand for their usual expressions.
 *
 * Day-of-month and day-of-week combine as Vixie cron (the cron most systems run) combines them: when
 * both are restricted (neither is written starting with `*`) a day matches if EITHER matches
 * (`0 0 1 * MON` is the 1st and every Monday); when either starts with `*`, both must match (a
 * day-of-month of `*` with step 2 and a day-of-week of `MON` is the odd-numbered Mondays).
 */

const MINUTE_MS = 60_000;
/** How far a search goes before it says "never": 28 years hold every date/weekday combination. */
const SEARCH_SPAN_MS = 28 * 366 * 86_400_000;

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const FIELDS: readonly FieldSpec[] = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day of month", min: 1, max: 31 },
  { name: "month", min: 1, max: 12, names: ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"] },
  // 7 is Sunday too (folded onto 0 after parsing).
  { name: "day of week", min: 0, max: 7, names: ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"] },
];

const MACROS: Record<string, string> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};

/** A parsed expression: which values each field allows (index = value). */
export interface CronSpec {
  minute: readonly boolean[];
  hour: readonly boolean[];
  dom: readonly boolean[];
  month: readonly boolean[];
  dow: readonly boolean[];
  /** Vixie's DOM_STAR / DOW_STAR: the field was written starting with `*`. */
  domStar: boolean;
  dowStar: boolean;
}

/** A refusal naming the field and what is wrong with it. */
export class CronError extends Error {
  override name = "CronError";
}

function valueOf(text: string, field: FieldSpec): number {
  const upper = text.toUpperCase();
  const named = field.names?.indexOf(upper) ?? -1;
  if (named >= 0) return named + (field.name === "month" ? 1 : 0);
  if (!/^\d{1,2}$/.test(text)) throw new CronError(`${field.name}: '${text}' is not a number${field.names ? " or a name" : ""}`);
  const n = Number(text);
  if (n < field.min || n > field.max) throw new CronError(`${field.name}: ${n} is outside ${field.min}-${field.max}`);
  return n;
}

function parseField(text: string, field: FieldSpec): boolean[] {
  const allowed = new Array<boolean>(field.max + 1).fill(false);
  for (const part of text.split(",")) {
    if (part === "") throw new CronError(`${field.name}: empty list item in '${text}'`);
    const [range, stepText, extra] = part.split("/");
    if (extra !== undefined || range === undefined) throw new CronError(`${field.name}: '${part}' has more than one '/'`);
    let lo: number;
    let hi: number;
    if (range === "*") {
      lo = field.min;
      hi = field.max;
    } else if (range.includes("-")) {
      const [a, b, more] = range.split("-");
      if (more !== undefined || !a || !b) throw new CronError(`${field.name}: '${range}' is not a range a-b`);
      lo = valueOf(a, field);
      hi = valueOf(b, field);
      if (lo > hi) throw new CronError(`${field.name}: range '${range}' runs backwards`);
    } else {
      lo = valueOf(range, field);
      // `a/s` runs from a to the field's end; a lone value is just itself.
      hi = stepText === undefined ? lo : field.max;
    }
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d{1,2}$/.test(stepText) || Number(stepText) < 1)
        throw new CronError(`${field.name}: step '${stepText}' is not a positive number`);
      step = Number(stepText);
      if (step > field.max - field.min + 1) throw new CronError(`${field.name}: step ${step} is larger than the field`);
    }
    for (let v = lo; v <= hi; v += step) allowed[v] = true;
  }
  return allowed;
}

/** Parses an expression; throws CronError with a message naming the field. */
export function parseCron(expression: string): CronSpec {
  const trimmed = expression.trim();
  const expanded = trimmed.startsWith("@") ? MACROS[trimmed.toLowerCase()] : trimmed;
  if (expanded === undefined) throw new CronError(`unknown macro '${trimmed}' (use ${Object.keys(MACROS).join(", ")})`);
  const parts = expanded.split(/\s+/);
  if (parts.length !== 5 || parts.some((p) => p === "")) {
    throw new CronError(`expected 5 fields (minute hour day-of-month month day-of-week), got ${parts.filter(Boolean).length}`);
  }
  const [minute, hour, dom, month, dow] = parts.map((p, i) => parseField(p, FIELDS[i]!));
  const weekdays = dow!.slice(0, 7);
  if (dow![7]) weekdays[0] = true;
  const spec: CronSpec = {
    minute: minute!,
    hour: hour!,
    dom: dom!,
    month: month!,
    dow: weekdays,
    domStar: parts[2]!.startsWith("*"),
    dowStar: parts[4]!.startsWith("*"),
  };
  // `0 0 30 2 *` parses but never comes: refuse it rather than schedule nothing forever.
  if (nextMatch(spec, Date.UTC(2000, 0, 1)) === null) throw new CronError("the expression matches no date (e.g. February 30)");
  return spec;
}

/** Why an expression is refused, or null when it is a valid one. */
export function cronProblem(expression: string): string | null {
  try {
    parseCron(expression);
    return null;
  } catch (err) {
    if (err instanceof CronError) return err.message;
    throw err;
  }
}

function dayMatches(spec: CronSpec, d: Date): boolean {
  const dom = spec.dom[d.getUTCDate()] === true;
  const dow = spec.dow[d.getUTCDay()] === true;
  return spec.domStar || spec.dowStar ? dom && dow : dom || dow;
}

/** The newest matching minute at or before `atMs`, or null if none within the search span. */
function latestMatch(spec: CronSpec, atMs: number): number | null {
  let t = Math.floor(atMs / MINUTE_MS) * MINUTE_MS;
  const limit = t - SEARCH_SPAN_MS;
  while (t >= limit) {
    const d = new Date(t);
    const y = d.getUTCFullYear();
    const mo = d.getUTCMonth();
    const day = d.getUTCDate();
    const h = d.getUTCHours();
    // Each miss jumps to the last minute of the previous month, day or hour.
    if (!spec.month[mo + 1]) t = Date.UTC(y, mo, 1) - MINUTE_MS;
    else if (!dayMatches(spec, d)) t = Date.UTC(y, mo, day) - MINUTE_MS;
    else if (!spec.hour[h]) t = Date.UTC(y, mo, day, h) - MINUTE_MS;
    else {
      let m = d.getUTCMinutes();
      while (m >= 0 && !spec.minute[m]) m--;
      if (m >= 0) return Date.UTC(y, mo, day, h, m);
      t = Date.UTC(y, mo, day, h) - MINUTE_MS;
    }
  }
  return null;
}

/** The first matching minute strictly after `afterMs`, or null if none within the search span. */
function nextMatch(spec: CronSpec, afterMs: number): number | null {
  let t = Math.floor(afterMs / MINUTE_MS) * MINUTE_MS + MINUTE_MS;
  const limit = t + SEARCH_SPAN_MS;
  while (t <= limit) {
    const d = new Date(t);
    const y = d.getUTCFullYear();
    const mo = d.getUTCMonth();
    const day = d.getUTCDate();
    const h = d.getUTCHours();
    // Each miss jumps to the first minute of the next month, day or hour (Date.UTC carries over).
    if (!spec.month[mo + 1]) t = Date.UTC(y, mo + 1, 1);
    else if (!dayMatches(spec, d)) t = Date.UTC(y, mo, day + 1);
    else if (!spec.hour[h]) t = Date.UTC(y, mo, day, h + 1);
    else {
      let m = d.getUTCMinutes();
      while (m < 60 && !spec.minute[m]) m++;
      if (m < 60) return Date.UTC(y, mo, day, h, m);
      t = Date.UTC(y, mo, day, h + 1);
    }
  }
  return null;
}

const specOf = (expr: string | CronSpec) => (typeof expr === "string" ? parseCron(expr) : expr);

/** The newest minute at or before `now` the expression matches (null only past the search span). */
export function latestSlotAtOrBefore(expr: string | CronSpec, now: Date): Date | null {
  const t = latestMatch(specOf(expr), now.getTime());
  return t === null ? null : new Date(t);
}

/** The first minute strictly after `t` the expression matches. */
export function nextSlotAfter(expr: string | CronSpec, t: Date): Date | null {
  const next = nextMatch(specOf(expr), t.getTime());
  return next === null ? null : new Date(next);
}
