/**
 * The systems the bench measures, by name. Libraries are loaded on demand, so a worker process of
 * one system never loads another's.
 */
import type { SystemName } from '../protocol.js';
import type { PrepareWorker, SystemAdmin } from './system.js';

/** Each system's module, loaded on first use: its admin and its worker preparation. */
const SYSTEMS: Record<SystemName, () => Promise<{ readonly admin: SystemAdmin; readonly prepare: PrepareWorker }>> = {
  postpone: async () => {
    const m = await import('./postpone.js');
    return { admin: m.postponeAdmin, prepare: m.preparePostponeWorker };
  },
  'graphile-worker': async () => {
    const m = await import('./graphile-worker.js');
    return { admin: m.graphileAdmin, prepare: m.prepareGraphileWorker };
  },
  'pg-boss': async () => {
    const m = await import('./pg-boss.js');
    return { admin: m.pgBossAdmin, prepare: m.preparePgBossWorker };
  },
};

export async function loadAdmin(system: SystemName): Promise<SystemAdmin> {
  return (await SYSTEMS[system]()).admin;
}

export async function loadPrepare(system: SystemName): Promise<PrepareWorker> {
  return (await SYSTEMS[system]()).prepare;
}
