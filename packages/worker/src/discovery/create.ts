import type { ResolvedOptions } from '../options.js';
import type { Discovery, DiscoveryDeps } from './discovery.js';
import { HybridDiscovery } from './hybrid.js';
import { PollDiscovery } from './poll.js';

/** The discovery of `options.discovery`. */
export function createDiscovery(options: ResolvedOptions, deps: DiscoveryDeps): Discovery {
  return options.discovery === 'hybrid' ? new HybridDiscovery(options.hybrid, deps) : new PollDiscovery(deps, options.pollIntervalMs);
}
