/**
 * IPC between the demo and its worker processes (`child_process.fork`, JSON serialization).
 * Times are ISO strings from the database clock, as the store returned them.
 */

export type WorkerMessage =
  | { readonly type: 'ready'; readonly workerId: string; readonly pid: number }
  | { readonly type: 'claimed'; readonly workerId: string; readonly taskId: string; readonly attempt: number; readonly dueAt: string; readonly claimedAt: string }
  | { readonly type: 'finished'; readonly workerId: string; readonly taskId: string; readonly attempt: number; readonly outcome: string }
  | { readonly type: 'reclaimed'; readonly workerId: string; readonly taskId: string; readonly attempt: number; readonly outcome: string }
  | { readonly type: 'leaseLost'; readonly workerId: string; readonly taskId: string; readonly attempt: number; readonly reason: string }
  | { readonly type: 'error'; readonly workerId: string; readonly operation: string; readonly message: string }
  /** One store query of discovery: a claim (and how many tasks it got: 0 is an empty claim) or a read of near tasks. */
  | { readonly type: 'query'; readonly workerId: string; readonly op: 'claim' | 'peek'; readonly tasks: number }
  /** Hybrid discovery's claims so far by what made them owed, each with its empty ones (sent every 250 ms and at the end). */
  | { readonly type: 'causes'; readonly workerId: string; readonly claimsByCause: Readonly<Record<string, { readonly claims: number; readonly empty: number }>> };

export type ParentMessage = { readonly type: 'stop' };

export function isWorkerMessage(value: unknown): value is WorkerMessage {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string' && typeof (value as { workerId?: unknown }).workerId === 'string';
}

export function isParentMessage(value: unknown): value is ParentMessage {
  return typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'stop';
}
