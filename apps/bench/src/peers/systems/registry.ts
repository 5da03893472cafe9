/**
 * The systems the bench measures, by name. Libraries are loaded on demand, so a worker process of
 * one system never loads another's.
 */
import type { SystemName } from '../protocol.js';
import type { PrepareWorker, SystemAdmin } from './system.js';

export async function loadAdmin(system: SystemName): Promise<SystemAdmin> {
  switch (system) {
    case 'postpone':
      return (await import('./postpone.js')).postponeAdmin;
    case 'graphile-worker':
      return (await import('./graphile-worker.js')).graphileAdmin;
    case 'pg-boss':
      return (await import('./pg-boss.js')).pgBossAdmin;
  }
}

export async function loadPrepare(system: SystemName): Promise<PrepareWorker> {
  switch (system) {
    case 'postpone':
      return (await import('./postpone.js')).preparePostponeWorker;
    case 'graphile-worker':
      return (await import('./graphile-worker.js')).prepareGraphileWorker;
    case 'pg-boss':
      return (await import('./pg-boss.js')).preparePgBossWorker;
  }
}
