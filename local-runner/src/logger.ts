/**
 * One JSON object per line on stderr, so logs stay greppable by job id and machine-readable.
 * stdout is left unused on purpose: nothing a job produces is ever echoed there.
 */

export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(event: string, fields?: LogFields): void;
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
}

export interface LogRecord extends LogFields {
  time: string;
  level: LogLevel;
  event: string;
}

export function createLogger(write: (line: string) => void = (line) => process.stderr.write(line), debug = false): Logger {
  const emit = (level: LogLevel, event: string, fields: LogFields = {}): void => {
    if (level === "debug" && !debug) return;
    const record: LogRecord = { time: new Date().toISOString(), level, event, ...fields };
    write(`${JSON.stringify(record, errorReplacer)}\n`);
  };
  return {
    debug: (event, fields) => emit("debug", event, fields),
    info: (event, fields) => emit("info", event, fields),
    warn: (event, fields) => emit("warn", event, fields),
    error: (event, fields) => emit("error", event, fields),
  };
}

// Error objects serialize to {} by default, which would hide the one thing the log is for.
function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message };
  return value;
}

/** A logger that keeps records in memory; tests wait on events instead of sleeping. */
export function createMemoryLogger(): Logger & { records: LogRecord[] } {
  const records: LogRecord[] = [];
  const logger = createLogger((line) => {
    records.push(JSON.parse(line) as LogRecord);
  }, true);
  return Object.assign(logger, { records });
}
