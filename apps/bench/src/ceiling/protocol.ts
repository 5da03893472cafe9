/** Messages between the ceiling (parent) and its processes, and a process's configuration. */

export interface CeilingChildConfig {
  readonly url: string;
  readonly schema: string;
  /** The task kind the claim asks for (the bench's task kind). */
  readonly kind: string;
  /** Claim limit = completion batch size. */
  readonly batch: number;
  readonly owner: string;
  readonly leaseMs: number;
  /** False: complete with `taskCompleteManyDrop` (DONE not kept: the fenced delete alone, no history). */
  readonly keepDone: boolean;
}

export type CeilingChildMessage =
  | { readonly type: 'ready' }
  /** The loop ended on an empty claim: tasks completed, statements sent, CPU ms of the loop. */
  | { readonly type: 'done'; readonly completed: number; readonly statements: number; readonly cpuMs: number }
  | { readonly type: 'error'; readonly message: string };
