/**
 * apps/bench/src/net — a network between the worker processes and PostgreSQL: each measured run's
 * workers connect through the harness TCP proxy (`packages/testkit/src/tcp-proxy.ts`, loopback only) that holds every
 * chunk `latencyMs` each way, and counts request/response turns. The bench's throughput and lateness
 * runs are reused unchanged through {@link latencyRoute}; the bench's own reads go direct.
 */
import type { Contender, Route, RunContext } from '../peers/contender.js';
import { type LatenessResult, runLateness } from '../peers/lateness.js';
import { type RoundsOf, alternate } from '../peers/alternate.js';
import { runThroughput, type ThroughputResult } from '../peers/throughput.js';
import { TcpProxy } from '@postpone/testkit';

/**
 * A route through a fresh TCP proxy with `latencyMs` added each way, one per measured run.
 * @param holds receives each closed proxy's mean hold per chunk, ms (what the latency really was)
 */
export function latencyRoute(latencyMs: number, holds: number[] = []): (url: string) => Promise<Route> {
  return async (url) => {
    const proxy = await TcpProxy.forUrl(url, { latencyMs });
    return {
      url: proxy.rewrite(url),
      turns: () => proxy.turns,
      async close() {
        if (Number.isFinite(proxy.meanHoldMs)) holds.push(proxy.meanHoldMs);
        await proxy.close();
      },
    };
  };
}

export interface NetworkParams {
  /** Added latency each way, ms. */
  readonly latencyMs: number;
  readonly rounds: number;
  readonly throughput: { readonly tasks: number; readonly processes: number; readonly concurrency: number; readonly capMs: number };
  readonly lateness: { readonly tasks: number; readonly spreadMs: number; readonly processes: number; readonly leadMs: number; readonly graceMs: number };
}

export interface NetworkResult {
  readonly latencyMs: number;
  /** Mean time a chunk was really held in the proxy, ms, over all runs (timers fire on whole ms). */
  readonly meanHoldMs: number;
  readonly throughput: readonly RoundsOf<ThroughputResult>[];
  readonly lateness: readonly RoundsOf<LatenessResult>[];
}

export interface NetworkHooks {
  readonly before?: (label: string, round: number) => void;
  readonly after?: (label: string, round: number) => void;
}

/** Throughput (with round trips per task) and lateness of every contender, each through its own latency proxy. */
export async function runNetwork(ctx: RunContext, contenders: readonly Contender[], params: NetworkParams, hooks: NetworkHooks = {}): Promise<NetworkResult> {
  const holds: number[] = [];
  const net: RunContext = { ...ctx, route: latencyRoute(params.latencyMs, holds) };
  const throughput = await alternate(contenders, params.rounds, (c) => runThroughput(net, c, params.throughput), {
    before: (l, r) => hooks.before?.(`throughput ${l}`, r),
    after: (l, r) => hooks.after?.(`throughput ${l}`, r),
  });
  const lateness = await alternate(contenders, params.rounds, (c) => runLateness(net, c, { ...params.lateness, concurrency: params.throughput.concurrency }), {
    before: (l, r) => hooks.before?.(`lateness ${l}`, r),
    after: (l, r) => hooks.after?.(`lateness ${l}`, r),
  });
  const meanHoldMs = holds.length > 0 ? holds.reduce((a, b) => a + b, 0) / holds.length : Number.NaN;
  return { latencyMs: params.latencyMs, meanHoldMs, throughput, lateness };
}
