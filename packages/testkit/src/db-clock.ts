/**
 * A database server whose clock a test can step: Debian's libfaketime preloaded into the server
 * process, its offset read from a file at every clock read (`FAKETIME_NO_CACHE`), the monotonic clock
 * left alone (`FAKETIME_DONT_FAKE_MONOTONIC`) as a real step of the wall clock leaves it
 * (libfaketime README, "Changing the 'x' dynamically"). Used by the clock-jump tests of
 * `@postpone/postgres`, `@postpone/worker` and `@postpone/cron` (issue #26 item 7).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Debian's single-threaded libfaketime, as PostgreSQL's server processes load it. */
export const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
const ENSURE_TOOLS = new URL('../scripts/ensure-fault-tools.sh', import.meta.url).pathname;

/**
 * Installs the Debian tools the fault tests need when they are missing (libfaketime, pgbouncer):
 * runs `scripts/ensure-fault-tools.sh` (apt, as root or through sudo), bounded by 180 s.
 * @throws Error from `execFileSync` when the script fails or overruns
 */
export function ensureFaultTools(): void {
  execFileSync('sh', [ENSURE_TOOLS], { stdio: 'inherit', timeout: 180_000 });
}

/** A server clock offset controlled by a file; see {@link createDbClockShift}. */
export interface DbClockShift {
  /** Pass as `serverEnv` of `startEmbeddedPostgres` (`@postpone/embedded`): the server then reads its offset from this shift's file. */
  readonly serverEnv: Readonly<Record<string, string>>;
  /**
   * Sets the offset to `seconds` (whole seconds, either sign) and waits until `readNowMs` — the server's
   * `clock_timestamp()` in ms, read on any session — is within 60 s of real time plus the offset
   * (50 reads at most, 20 ms apart).
   * @throws Error when the server's clock did not move within those reads
   */
  set(seconds: number, readNowMs: () => Promise<number>): Promise<void>;
  /** Removes the offset file's folder (after the server stopped). */
  dispose(): void;
}

/**
 * Prepares a clock shift at offset 0: installs libfaketime when missing ({@link ensureFaultTools}) and
 * makes a folder under the temp dir readable by the OS user `postgres`, the server's user under root.
 * @param prefix folder name prefix, e.g. `postpone-dbclock-`
 * @throws Error when libfaketime is still missing at {@link LIBFAKETIME} (`apt-get install -y faketime`)
 */
export function createDbClockShift(prefix: string): DbClockShift {
  if (!existsSync(LIBFAKETIME)) ensureFaultTools();
  if (!existsSync(LIBFAKETIME)) throw new Error(`libfaketime missing at ${LIBFAKETIME}: apt-get install -y faketime`);
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o755);
  const offsetFile = join(dir, 'offset');
  writeFileSync(offsetFile, '+0');
  chmodSync(offsetFile, 0o644);
  return {
    serverEnv: { LD_PRELOAD: LIBFAKETIME, FAKETIME_TIMESTAMP_FILE: offsetFile, FAKETIME_NO_CACHE: '1', FAKETIME_DONT_FAKE_MONOTONIC: '1' },
    async set(seconds, readNowMs) {
      writeFileSync(offsetFile, `${seconds >= 0 ? '+' : ''}${seconds}`);
      for (let i = 0; i < 50; i++) {
        if (Math.abs((await readNowMs()) - (Date.now() + seconds * 1_000)) < 60_000) return;
        await sleep(20);
      }
      throw new Error(`the server clock did not move to offset ${seconds} s`);
    },
    dispose() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
