import { afterEach, describe, expect, it } from 'vitest';
import { ExternalService, callExternal } from '../../src/faults/external-service.js';

describe('ExternalService (fake external HTTP service)', () => {
  let service: ExternalService | undefined;
  afterEach(async () => {
    await service?.close();
    service = undefined;
  });

  it('applies a key once and counts calls, applications and keys', async () => {
    service = await ExternalService.start();
    expect(new URL(service.url).hostname).toBe('127.0.0.1');
    expect(await callExternal(service.applyUrl, 'task-1')).toBe(true);
    expect(await callExternal(service.applyUrl, 'task-1')).toBe(false);
    expect(await callExternal(service.applyUrl, 'task-2')).toBe(true);
    expect(service.stats()).toEqual({ calls: 3, applied: 2, keysSeen: ['task-1', 'task-2'] });
  });

  it('applies once under concurrent calls with the same key', async () => {
    service = await ExternalService.start();
    const results = await Promise.all(Array.from({ length: 20 }, () => callExternal(service!.applyUrl, 'same')));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(service.stats()).toEqual({ calls: 20, applied: 1, keysSeen: ['same'] });
  });

  it('refuses a call without a key and applies nothing', async () => {
    service = await ExternalService.start();
    const response = await fetch(service.applyUrl, { method: 'POST' });
    expect(response.status).toBe(400);
    expect(service.stats()).toEqual({ calls: 0, applied: 0, keysSeen: [] });
    await expect(callExternal(`${service.url}/nowhere`, 'k')).rejects.toThrow(/404/);
  });

  it('serves its stats over HTTP', async () => {
    service = await ExternalService.start();
    await callExternal(service.applyUrl, 'a');
    const stats = (await (await fetch(`${service.url}/stats`)).json()) as unknown;
    expect(stats).toEqual({ calls: 1, applied: 1, keysSeen: ['a'] });
  });
});
