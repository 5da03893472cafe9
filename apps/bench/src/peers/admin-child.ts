/**
 * Entry point of the bench's admin helper process (see `admin-host.ts`): runs a peer's own `migrate`
 * and `enqueue` for the parent, one request at a time as they arrive, and exits when the parent goes.
 */
import type { AdminReply, AdminRequest } from './admin-host.js';
import { loadLocalAdmin } from './systems/registry.js';

process.on('message', (req: AdminRequest) => {
  void (async () => {
    let reply: AdminReply;
    try {
      const admin = await loadLocalAdmin(req.system);
      if (req.op === 'migrate') await admin.migrate(req.url);
      else await admin.enqueue(req.url, req.tasks ?? []);
      reply = { id: req.id };
    } catch (error) {
      reply = { id: req.id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) };
    }
    process.send?.(reply);
  })();
});
process.on('disconnect', () => process.exit(0));
