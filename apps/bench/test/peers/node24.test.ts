/**
 * The bench finds the repository's `scripts/node24.sh` from its built module (it once looked one
 * folder too high after the package moved under `apps/`, and `pnpm bench` failed before measuring).
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { node24Script } from '../../dist/peers/node24.js';

describe('node24Script', () => {
  it('names the repository script that fetches Node.js 24', () => {
    const script = node24Script();
    expect(script.endsWith('/scripts/node24.sh')).toBe(true);
    expect(existsSync(script)).toBe(true);
  });
});
