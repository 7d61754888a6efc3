// Every benchmark the harness knows, in the order `npm run bench` runs them. A feature adds its
// benchmark as one file under bench/ exporting `{ name, run(ctx) }` and registers it here.
import audit from "./audit.bench.mjs";
import conversation from "./conversation.bench.mjs";
import council from "./council.bench.mjs";
import inboxCeiling from "./inbox-ceiling.bench.mjs";
import inboxGrowth from "./inbox-growth.bench.mjs";
import inboxPools from "./inbox-pools.bench.mjs";
import prediction from "./prediction.bench.mjs";
import runnerProtocol from "./runner-protocol.bench.mjs";
import runnerProtocolBudgets from "./runner-protocol-budgets.bench.mjs";
import swarm from "./swarm.bench.mjs";
import topologyTick from "./topology-tick.bench.mjs";

export const BENCHMARKS = [
  runnerProtocol,
  runnerProtocolBudgets,
  inboxGrowth,
  inboxCeiling,
  inboxPools,
  council,
  topologyTick,
  prediction,
  audit,
  conversation,
  swarm,
];
