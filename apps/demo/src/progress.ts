/**
 * The progress bar (cli-progress 3.12, on stderr; it draws nothing when stderr is not a terminal).
 */
import cliProgress from 'cli-progress';

export interface Progress {
  update(done: number, fields: { claims: number; reclaimed: number; status: string }): void;
  stop(): void;
}

export function createProgress(total: number, enabled: boolean): Progress {
  if (!enabled) return { update: () => {}, stop: () => {} };
  const bar = new cliProgress.SingleBar(
    {
      format: ' {bar} {value}/{total} terminal | claims {claims} | reclaimed {reclaimed} | {status}',
      hideCursor: true,
      clearOnComplete: false,
      barsize: 30,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0, { claims: 0, reclaimed: 0, status: 'starting' });
  let stopped = false;
  return {
    update: (done, fields) => bar.update(done, fields),
    stop: () => {
      if (stopped) return;
      stopped = true;
      bar.stop();
    },
  };
}
