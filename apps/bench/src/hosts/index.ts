/**
 * apps/bench/src/hosts — the bench section `--hosts` (issue 16, "Many worker hosts on one
 * primary"): worker hosts as network namespaces, measured for server connections, statements per
 * second per host, claims per task and p99 lateness. See {@link runHostsBench}.
 */
export { CountingProxy, FrontendCounter } from './counting-proxy.js';
export { HOSTS_WORKER, type HostsBenchOptions, type HostsBenchResult, type HostsRow, hostsMarkdown, runHostsBench } from './run.js';
export { writeHostsSection } from './main-section.js';
