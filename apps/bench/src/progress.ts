/**
 * The progress bar shown while the bench runs (cli-progress). On a terminal it redraws in place;
 * elsewhere (CI logs) it prints its line every few seconds.
 */
import cliProgress from 'cli-progress';

export interface Progress {
  /** Declares `steps` more units of work. */
  addSteps(steps: number): void;
  /** Marks one unit done and shows what runs next. */
  step(label: string): void;
  /** Shows a label without advancing. */
  label(label: string): void;
  /** Prints a line above the bar. */
  log(line: string): void;
  stop(): void;
}

/** A progress bar on stderr (stdout keeps the report path and CASE lines). */
export function createProgress(enabled = true): Progress {
  if (!enabled) {
    return { addSteps() {}, step() {}, label() {}, log: (line) => void process.stderr.write(`${line}\n`), stop() {} };
  }
  const multi = new cliProgress.MultiBar(
    {
      format: 'bench [{bar}] {value}/{total} {percentage}% | {duration_formatted} | {label}',
      stream: process.stderr,
      noTTYOutput: true,
      notTTYSchedule: 5000,
      hideCursor: true,
      clearOnComplete: false,
    },
    cliProgress.Presets.shades_classic,
  );
  let total = 0;
  let stopped = false;
  const bar = multi.create(1, 0, { label: 'starting' });
  return {
    addSteps(steps) {
      total += steps;
      bar.setTotal(Math.max(total, 1));
    },
    step(label) {
      bar.increment(1, { label });
    },
    label(label) {
      bar.update({ label });
    },
    log(line) {
      if (process.stderr.isTTY) multi.log(`${line}\n`);
      else process.stderr.write(`${line}\n`);
    },
    stop() {
      if (stopped) return;
      stopped = true;
      multi.stop();
    },
  };
}
