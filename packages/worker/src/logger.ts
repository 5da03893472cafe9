import { type LevelWithSilent, type Logger, pino } from 'pino';

/**
 * The worker's logger: a child of the caller's pino logger, or a pino logger of its own that is
 * silent unless `level` says otherwise (pino writes JSON lines to stdout; pino 10 docs "API").
 */
export function workerLogger(workerId: string, logger: Logger | undefined, level: LevelWithSilent | undefined): Logger {
  if (logger) return level === undefined ? logger.child({ workerId }) : logger.child({ workerId }, { level });
  return pino({ name: 'postpone-worker', level: level ?? 'silent' }).child({ workerId });
}
