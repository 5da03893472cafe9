import { describe, expect, it } from 'vitest';
import { EventLog, pollUntil, Verdict, withTimeout } from '../src/index.js';

type E = { type: string; n: number };

describe('EventLog', () => {
  it('resolves from history or on arrival, honouring fromSeq and nth', async () => {
    const log = new EventLog<E>();
    log.push({ type: 'a', n: 1 });
    expect((await log.waitFor((e) => e.type === 'a', 100)).n).toBe(1);
    const mark = log.mark();
    const third = log.waitFor((e) => e.type === 'a', 1_000, 'third a', mark, 3);
    log.push({ type: 'a', n: 2 });
    log.push({ type: 'b', n: 3 });
    log.push({ type: 'a', n: 4 });
    log.push({ type: 'a', n: 5 });
    expect(await third).toMatchObject({ n: 5, seq: 4 });
    expect(log.filter((e) => e.type === 'a').map((e) => e.n)).toEqual([1, 2, 4, 5]);
  });

  it('rejects at the deadline and when closed, after letting the final event match', async () => {
    const log = new EventLog<E>();
    await expect(log.waitFor((e) => e.type === 'never', 50, 'never')).rejects.toThrow(/timed out after 50 ms waiting for never/);
    const end = log.waitFor((e) => e.type === 'end', 1_000);
    const other = log.waitFor((e) => e.type === 'other', 1_000, 'other');
    log.close('closed by test', { type: 'end', n: 0 });
    expect((await end).type).toBe('end');
    await expect(other).rejects.toThrow(/other: closed by test/);
    await expect(log.waitFor((e) => e.type === 'other', 1_000, 'late')).rejects.toThrow(/late: closed by test/);
  });
});

describe('bounded waits', () => {
  it('pollUntil returns the first accepted value and times out otherwise', async () => {
    let calls = 0;
    expect(await pollUntil(() => (++calls === 3 ? 'ok' : undefined), { timeoutMs: 1_000, intervalMs: 1 })).toBe('ok');
    expect(calls).toBe(3);
    await expect(pollUntil(() => false, { timeoutMs: 30, intervalMs: 5, what: 'nothing' })).rejects.toThrow(/waiting for nothing; last value: false/);
  });

  it('withTimeout races a promise against a deadline', async () => {
    expect(await withTimeout(Promise.resolve(1), 100, 'one')).toBe(1);
    await expect(withTimeout(new Promise(() => {}), 20, 'forever')).rejects.toThrow(/forever/);
  });
});

describe('Verdict', () => {
  it('passes only when every check holds, and lists the failures', () => {
    const v = new Verdict();
    expect(v.pass).toBe(false); // no check, no pass
    v.set('n', 3).equal('n is 3', 3, 3);
    v.atLeast('n >= 1', 3, 1);
    expect(v.pass).toBe(true);
    v.equal('list', [1, 2], [1, 3]);
    v.atMost('n <= 2', 3, 2);
    expect(v.pass).toBe(false);
    expect(v.failures().map((f) => `${f.label}: ${f.detail}`)).toEqual(['list: expected [1,3], got [1,2]', 'n <= 2: expected <= 2, got 3']);
    expect(v.fields).toEqual({ n: 3 });
  });
});
