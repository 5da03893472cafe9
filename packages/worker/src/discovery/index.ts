/**
 * @postpone/worker — how a Postpone worker finds due tasks (docs/contract.md#discovery): polling,
 * or hybrid discovery (a timing wheel of near tasks read from the store, kept current by
 * notifications, re-read on a fallback period, after a pause and after a reconnect). Discovery only
 * says when to claim; the claim is the store's atomic claim, so it never decides correctness.
 */
export { createDiscovery, type DiscoverySettings } from './create.js';
export type {
  ClaimCause,
  ClaimCount,
  Discovery,
  DiscoveryDeps,
  DiscoveryOperation,
  DiscoveryStats,
  RebuildReason,
  WheelRebuilt,
} from './discovery.js';
export { ANNOUNCE_MS, BURST_TASKS, FALLBACK_GRACE_MS, GATHER_TICKS, HELP_LATE_MS, HELP_MS, HybridDiscovery, PEER_TTL_MS, SLICE_TICKS } from './hybrid.js';
export { hashText, Peers, rendezvousScore } from './peers.js';
export { PollDiscovery, LISTEN_RETRY_MS, LISTEN_START_WAIT_MS } from './poll.js';
export { DatabaseClock } from './database-clock.js';
export { PauseWatch } from './pause-watch.js';
export { noticeSource, readNotice, readWorkerNotice, type NoticeSource, type TaskNotice, type WorkerPresence } from './notices.js';
export {
  HYBRID_DEFAULTS,
  resolveHybridOptions,
  type DiscoveryMode,
  type HybridOptions,
  type ResolvedHybridOptions,
} from './hybrid-options.js';
