/** Cron expressions; they must match `[triggers] crons` in wrangler.toml. */
export const CRONS = {
  hourly: "0 * * * *",
  everyMinute: "* * * * *",
} as const;
export type CronExpression = (typeof CRONS)[keyof typeof CRONS];
