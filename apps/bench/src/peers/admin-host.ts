/**
 * A peer's `migrate` and `enqueue` run in one long-lived helper process on the workers' Node.js
 * (`admin-child.js`, forked once per system and reused), so the bench's parent never imports
 * pg-boss 12 or graphile-worker 0.18 (both need Node.js ≥ 22). `settings` and `remaining` stay in
 * the parent: they need no library.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { workerNode } from './node24.js';
import type { SystemName } from './protocol.js';
import type { BenchTaskSpec, SystemAdmin } from './systems/system.js';

const ADMIN_SCRIPT = fileURLToPath(new URL('./admin-child.js', import.meta.url));

/** A request to the helper (run `op` of `system`'s admin on `url`), and its answer (`error` when it failed). */
export type AdminRequest = { readonly id: number; readonly system: SystemName; readonly op: 'migrate' | 'enqueue'; readonly url: string; readonly tasks?: readonly BenchTaskSpec[] };
export type AdminReply = { readonly id: number; readonly error?: string };

/** Longest a helper request may take, ms (a bulk insert of 30 000 rows takes a few seconds). */
const REQUEST_TIMEOUT_MS = 300_000;

class AdminHost {
  private proc: ChildProcess | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: () => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();

  private process(): ChildProcess {
    if (this.proc && this.proc.exitCode === null && this.proc.connected) return this.proc;
    const proc = fork(ADMIN_SCRIPT, [], { execPath: workerNode(), stdio: ['ignore', 'ignore', 'inherit', 'ipc'], serialization: 'advanced' });
    proc.on('message', (m: AdminReply) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      clearTimeout(p.timer);
      if (m.error === undefined) p.resolve();
      else p.reject(new Error(m.error));
    });
    proc.on('exit', (code) => {
      for (const p of this.pending.values()) {
        clearTimeout(p.timer);
        p.reject(new Error(`bench admin process exited (code ${code})`));
      }
      this.pending.clear();
    });
    // The parent may exit while the helper idles; the helper exits when the channel closes.
    proc.unref();
    proc.channel?.unref();
    this.proc = proc;
    return proc;
  }

  async request(req: Omit<AdminRequest, 'id'>): Promise<void> {
    const proc = this.process();
    const id = this.nextId++;
    proc.channel?.ref();
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          this.pending.delete(id);
          reject(new Error(`bench admin ${req.system} ${req.op} timed out`));
        }, REQUEST_TIMEOUT_MS);
        this.pending.set(id, { resolve, reject, timer });
        proc.send({ ...req, id });
      });
    } finally {
      if (this.pending.size === 0) proc.channel?.unref();
    }
  }
}

const host = new AdminHost();

/** `admin` with `migrate` and `enqueue` run in the helper process on the workers' Node.js. */
export function remoteAdmin(admin: SystemAdmin): SystemAdmin {
  return {
    ...admin,
    migrate: (url) => host.request({ system: admin.system, op: 'migrate', url }),
    enqueue: (url, tasks) => host.request({ system: admin.system, op: 'enqueue', url, tasks }),
  };
}
