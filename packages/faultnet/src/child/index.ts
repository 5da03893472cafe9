/**
 * packages/faultnet/src/child — the program the harness forks for a fault case, and the messages it
 * speaks. The entry `worker-main` (run as a file, never imported) reads its {@link ChildConfig} from
 * `POSTPONE_HARNESS_CONFIG`, opens its own pool and the real PostgreSQL store, and runs the real
 * worker with a planned handler, a claim loop, or migrations, reporting {@link ChildEvent}s over IPC
 * and obeying {@link ChildControl}s (`start`, `proceed` past a fault point, `stop`, `migrate`).
 *
 * Also here: the negative controls the child and the cases share — a read-then-update claim, an
 * unfenced complete, an effect table without a unique key ({@link NegativeControls}); never the product.
 */
export * from './protocol.js';
export { ParentChannel } from './channel.js';
export * from './negative/sql.js';
export * from './negative/controls.js';
