/**
 * The systems the bench measures, by name. Libraries are loaded on demand, so a worker process of
 * one system never loads another's; the peers' libraries (Node.js ≥ 22) load only in the bench's
 * Node.js 24 processes — in the parent their admin runs through `admin-host.ts`.
 */
import { remoteAdmin } from '../admin-host.js';
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

/** The admin the bench's parent uses: Postpone's runs here, a peer's `migrate`/`enqueue` in the helper process. */
export async function loadAdmin(system: SystemName): Promise<SystemAdmin> {
  const admin = (await SYSTEMS[system]()).admin;
  return system === 'postpone' ? admin : remoteAdmin(admin);
}

/** The admin run in this process (the helper process's side). */
export async function loadLocalAdmin(system: SystemName): Promise<SystemAdmin> {
  return (await SYSTEMS[system]()).admin;
}

export async function loadPrepare(system: SystemName): Promise<PrepareWorker> {
  return (await SYSTEMS[system]()).prepare;
}
