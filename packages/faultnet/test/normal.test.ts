import { describe, it } from 'vitest';
import { runCase } from '../src/index.js';
import { normalThreeWorkers } from './cases/seed.js';

describe('evidence: the normal path', () => {
  it('normal_three_workers: 3 worker processes, 300 tasks, each claimed and done once', async () => {
    await runCase('normal_three_workers', normalThreeWorkers);
  });
});
