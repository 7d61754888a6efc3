export declare const ZERO_ID: string;
export interface SecretSpec {
  name: string;
  kind: "generated" | "optional";
  about: string;
  file?: boolean;
}
export declare const SECRETS: readonly SecretSpec[];
export declare class DeployError extends Error {
  fix: string;
  constructor(message: string, fix: string);
}
export interface D1Target {
  binding: string;
  name: string;
  id: string | undefined;
  migrationsDir: string;
}
export interface Target {
  envName: string;
  workerName: string;
  accountId: string | undefined;
  d1: D1Target[];
  queues: string[];
  buckets: string[];
}
export declare function readTarget(configText: string, envName: string): Target;
export declare function setD1DatabaseId(configText: string, envName: string, binding: string, id: string): string;
export type Step =
  | { action: "create-d1"; db: D1Target }
  | { action: "adopt-d1"; db: D1Target; id: string }
  | { action: "create-queue"; name: string }
  | { action: "create-bucket"; name: string }
  | { action: "apply-migrations"; db: D1Target; pending: string[] | null }
  | { action: "put-secret"; secret: SecretSpec }
  | { action: "deploy" };
export declare function planDeploy(input: {
  target: Target;
  account: { d1: Array<{ uuid: string; name: string }>; queues: Set<string>; buckets: Set<string> };
  secretsSet: Set<string> | null;
  localMigrations: Record<string, string[]>;
  pendingMigrations?: Record<string, string[]>;
  provided?: Set<string>;
}): { steps: Step[]; problems: DeployError[]; skippedSecrets: SecretSpec[]; changesAccount: boolean };
export declare function describeStep(step: Step, target: Target): string;
