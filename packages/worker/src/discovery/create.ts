import type { Discovery, DiscoveryDeps } from './discovery.js';
import { HybridDiscovery } from './hybrid.js';
import type { DiscoveryMode, ResolvedHybridOptions } from './hybrid-options.js';
import { PollDiscovery } from './poll.js';

/** What {@link createDiscovery} reads of the worker's resolved options. */
export interface DiscoverySettings {
  readonly discovery: DiscoveryMode;
  readonly hybrid: ResolvedHybridOptions;
  /** Poll mode: wait between claims when the last claim came back short (ms). */
  readonly pollIntervalMs: number;
}

/** The discovery of `settings.discovery`: hybrid (a wheel of near tasks) or poll. */
export function createDiscovery(settings: DiscoverySettings, deps: DiscoveryDeps): Discovery {
  return settings.discovery === 'hybrid' ? new HybridDiscovery(settings.hybrid, deps) : new PollDiscovery(deps, settings.pollIntervalMs);
}
