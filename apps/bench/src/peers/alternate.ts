/**
 * A B A B: every round runs each contender once, in the same order, so slow drifts of the machine
 * (caches, other load) spread over all contenders instead of landing on one. A failed run is
 * recorded and skipped; it does not stop the others.
 */
import { type Contender, contenderLabel } from './contender.js';

export interface RoundsOf<T> {
  readonly label: string;
  readonly system: string;
  readonly setting: string;
  /** One entry per successful round. */
  readonly rounds: T[];
  /** Messages of failed rounds. */
  readonly errors: string[];
}

export async function alternate<T>(
  contenders: readonly Contender[],
  rounds: number,
  run: (contender: Contender, round: number) => Promise<T>,
  hooks: { readonly before?: (label: string, round: number) => void; readonly after?: (label: string, round: number) => void } = {},
): Promise<RoundsOf<T>[]> {
  const out = contenders.map((c) => ({ label: contenderLabel(c), system: c.admin.system, setting: c.setting, rounds: [] as T[], errors: [] as string[] }));
  for (let round = 1; round <= rounds; round++) {
    for (const [i, contender] of contenders.entries()) {
      const slot = out[i] as RoundsOf<T>;
      hooks.before?.(slot.label, round);
      try {
        slot.rounds.push(await run(contender, round));
      } catch (error) {
        slot.errors.push(`round ${round}: ${error instanceof Error ? error.message : String(error)}`);
      }
      hooks.after?.(slot.label, round);
    }
  }
  return out;
}
