import { afterEach, describe, expect, it } from 'vitest';
import type { ChildControl, ChildEvent } from '../src/child/protocol.js';
import { shellExitStatus } from '../src/child-process.js';
import { ProcessGroup } from '../src/process-group.js';

const ECHO = new URL('./fixtures/echo-child.ts', import.meta.url);

describe('child processes (spawn, IPC, signals)', () => {
  const group = new ProcessGroup();
  afterEach(async () => {
    await group.killAll();
  });
  const spawn = (name: string) => group.spawn<ChildEvent, ChildControl>(ECHO, { name });

  it('exchanges events and controls, parks until proceed, and stops gracefully', async () => {
    const child = spawn('echo');
    const ready = await child.waitFor('ready');
    expect(ready.pid).toBe(child.pid);
    await child.send({ type: 'start' });
    const parked = await child.waitFor('parked');
    expect(parked).toMatchObject({ id: '1', attempt: 1, point: 'afterClaim' });
    expect(child.eventsOf('committed')).toHaveLength(0);
    await child.send({ type: 'proceed', id: '1', point: 'afterClaim' });
    const committed = await child.waitFor('committed');
    expect(committed.seq).toBeGreaterThan(parked.seq);
    await child.send({ type: 'stop' });
    await child.waitFor('stopped');
    const status = await child.exited;
    expect(status).toEqual({ code: 0, signal: null });
    expect(child.alive).toBe(false);
    await expect(child.send({ type: 'start' })).rejects.toThrow(/not connected/);
  });

  it('kill -9 ends the process with SIGKILL (shell status 137) and rejects pending waits', async () => {
    const child = spawn('victim');
    await child.waitFor('ready');
    const pending = child.waitFor('committed', () => true, 10_000);
    const status = await child.kill9();
    expect(status).toEqual({ code: null, signal: 'SIGKILL' });
    expect(shellExitStatus(status)).toBe(137);
    await expect(pending).rejects.toThrow(/exited/);
    expect(child.eventsOf('exited')).toHaveLength(1);
  });

  it('SIGSTOP freezes the process until SIGCONT', async () => {
    const child = spawn('sleeper');
    await child.waitFor('ready');
    child.sigstop();
    // A frozen process cannot read the control, so it cannot answer while stopped.
    await child.send({ type: 'start' });
    await expect(child.waitFor('started', () => true, 300)).rejects.toThrow(/timed out/);
    child.sigcont();
    await child.waitFor('started', () => true, 5_000);
    await child.waitFor('parked', () => true, 5_000);
    expect(child.alive).toBe(true);
  });

  it('a wait times out with the recent events in its message', async () => {
    const child = spawn('quiet');
    await child.waitFor('ready');
    await expect(child.waitFor('committed', () => true, 100)).rejects.toThrow(/timed out after 100 ms waiting for quiet: committed; last events/);
  });

  it('killAll ends every process of the group, stopped ones included', async () => {
    const a = spawn('a');
    const b = spawn('b');
    await Promise.all([a.waitFor('ready'), b.waitFor('ready')]);
    b.sigstop();
    const statuses = await group.killAll();
    expect(statuses.map((s) => s.signal)).toEqual(['SIGKILL', 'SIGKILL']);
    expect(a.alive || b.alive).toBe(false);
  });
});
