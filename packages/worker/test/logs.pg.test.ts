/**
 * What a worker logs, read from a pino destination stream (a real worker on PostgreSQL): one short
 * start line at info; a DEAD task, a reclaim and a stale rejection at info/warn; per-task lines at
 * debug only; every line next to the event it reports, in the same order.
 */
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createWorker, waitForEvent, type WorkerEventName } from '../src/index.js';
import { gate, type Harness, perTest, pgHarness } from './harness.js';

const INFO = 30;
const WARN = 40;

interface Line {
  readonly text: string;
  readonly json: Record<string, unknown>;
}

/** Log lines and events on one timeline (pino writes to a plain stream object synchronously). */
function timeline(): { entries: (Line | { event: WorkerEventName })[]; lines: () => Line[]; stream: { write(text: string): void } } {
  const entries: (Line | { event: WorkerEventName })[] = [];
  return {
    entries,
    lines: () => entries.filter((e): e is Line => 'text' in e),
    stream: { write: (text: string) => entries.push({ text: text.trimEnd(), json: JSON.parse(text) as Record<string, unknown> }) },
  };
}

function label(entry: Line | { event: WorkerEventName }): string {
  return 'event' in entry ? `event:${entry.event}` : `log:${String(entry.json.msg)}`;
}

describe('worker log lines (PostgreSQL)', () => {
  let h: Harness<unknown> | undefined;
  const t = perTest();

  it('logs a short start line, a DEAD task, a reclaim and a stale rejection, each in order with its event', async () => {
    h = await t.open(pgHarness);
    const log = timeline();
    const g = gate();
    const worker = createWorker({
      store: h.store,
      id: 'logs-pg',
      leaseMs: 60_000,
      pollIntervalMs: 5,
      logger: pino({ level: 'debug' }, log.stream),
      handlers: {
        boom: async () => {
          throw new Error('kaboom');
        },
        slow: async () => {
          await g.promise;
          return 'late';
        },
      },
    });
    t.track(worker);
    for (const event of ['claimed', 'completed', 'failed', 'reclaimed', 'rejectedStale'] as const) worker.on(event, () => log.entries.push({ event }));

    // A task out of attempts: DEAD.
    const dead = await h.store.schedule({ kind: 'boom', maxAttempts: 1 });
    const failed = waitForEvent(worker, 'failed');
    worker.start();
    await failed;
    // A task whose lease is taken away while its handler runs: reclaimed, then its complete is stale.
    const slow = await h.store.schedule({ kind: 'slow' });
    const claimed = waitForEvent(worker, 'claimed', { filter: (e) => e.task.id === slow.id });
    await claimed;
    await h.expireLease(slow.id);
    const stale = waitForEvent(worker, 'rejectedStale');
    await worker.reclaim();
    g.open();
    await stale;
    await worker.stop();

    const lines = log.lines();
    const start = lines.find((l) => l.json.msg === 'worker started');
    expect(start?.json).toMatchObject({ level: INFO, workerId: 'logs-pg', discovery: 'poll', concurrency: 10, leaseMs: 60_000 });
    expect(start?.text.length).toBeLessThan(200);
    expect(lines[0]).toBe(start);

    expect(lines).toContainEqual(
      expect.objectContaining({
        json: expect.objectContaining({ level: WARN, msg: 'task is DEAD: the attempt failed and no attempts are left', taskId: dead.id, kind: 'boom', next: 'DEAD', error: 'Error: kaboom' }),
      }),
    );
    expect(lines).toContainEqual(expect.objectContaining({ json: expect.objectContaining({ level: INFO, msg: 'reclaimed an expired lease', taskId: slow.id, next: 'SCHEDULED' }) }));
    expect(lines).toContainEqual(expect.objectContaining({ json: expect.objectContaining({ level: WARN, msg: 'store rejected a stale attempt', taskId: slow.id, operation: 'complete' }) }));
    // Per-task lines are debug.
    for (const l of lines.filter((x) => x.json.msg === 'claimed' || x.json.msg === 'completed')) expect(l.json.level).toBe(20);

    // In order with the events: each line right after the event it reports (the slow task may be
    // claimed again after the reclaim, and its two completions may come back in either order).
    const order = log.entries.map(label);
    const nextTo = (event: string) => order.flatMap((x, i) => (x === event ? [order[i + 1]] : []));
    expect(nextTo('event:claimed').length).toBeGreaterThanOrEqual(2);
    for (const next of nextTo('event:claimed')) expect(next).toBe('log:claimed');
    expect(nextTo('event:failed')).toEqual(['log:task is DEAD: the attempt failed and no attempts are left']);
    expect(nextTo('event:reclaimed')).toEqual(['log:reclaimed an expired lease']);
    expect(nextTo('event:rejectedStale')).toEqual(['log:store rejected a stale attempt']);
    expect(order[order.indexOf('event:rejectedStale') - 1]).toBe('event:completed');
    for (const next of nextTo('event:completed')) expect(['log:completed', 'event:rejectedStale']).toContain(next);
    expect(lines.at(-1)?.json).toMatchObject({ level: INFO, msg: 'stopped' });

    if (process.env.POSTPONE_PRINT_LOG_SAMPLE) console.log(lines.filter((l) => (l.json.level as number) >= INFO).map((l) => l.text).join('\n'));
  });
});
