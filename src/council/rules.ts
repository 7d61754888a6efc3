/**
 * The seed's numbers (004 and API.md "Clarifications"), in one place. They are requirements, not
 * settings: pure functions take them as a parameter (defaulting to these) so tests can name them,
 * and operational knobs (model runtimes, waits) live in the `council` config section instead.
 */
export const COUNCIL_RULES = {
  // terms
  maxMembers: 9,
  minMembers: 5,
  termDays: 7,
  termMaxSessions: 10,
  reelectionKeepShare: 0.4,
  reelectionMinEfficiency: 0.3,
  cooldownDays: 7,
  /** "majority low response": more than half the members answer fewer than this share of requests… */
  lowResponseRate: 0.5,
  /** …counted only once a member has been asked this many times (fewer is not yet a rate). */
  lowResponseMinRequests: 2,
  unreachableHours: 48,
  idleDays: 3,
  /** "efficiency stagnation": the term's mean efficiency did not rise over this many sessions… */
  stagnationSessions: 3,
  /** …and the latest sample is below this. */
  stagnationBelow: 0.5,
  // selection
  topShare: 0.6,
  memberMinReputation: 40,
  memberMinTier: 3,
  heartbeatWindowHours: 48,
  activeWindowHours: 72,
  // gates
  proposeMinReputation: 30,
  proposeMinTier: 3,
  voteMinReputation: 20,
  voteMinTier: 1,
  autoSecondReputation: 60,
  proposalsPerHour: 3,
  maxPendingProposals: 2,
  // windows
  secondingMinutes: 30,
  divergeReplaceMinutes: 5,
  maxReplacementRounds: 2,
  challengeMinutes: 10,
  votingMinutes: 10,
  noResponseAbandonMinutes: 60,
  // tally
  memberWeight: 1.0,
  communityWeight: 0.5,
  approveShare: 0.6,
  rejectShare: 0.5,
  principleMinConfidence: 0.7,
  // execution
  swarmTaskDays: 90,
  // abuse limits of ours (not in the seed): dialogs one node may post in one session
  maxDialogsPerNode: 30,
} as const satisfies Record<string, number>;

/** The rules' shape with plain numbers, so a test can name a variation. */
export type CouncilRules = { readonly [K in keyof typeof COUNCIL_RULES]: number };

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;
