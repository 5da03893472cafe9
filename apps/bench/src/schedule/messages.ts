/** What the scheduling-throughput run's parent and children send each other (IPC). */

/** How schedule calls announce new tasks: `PostgresStoreOptions.scheduleNotices`. */
export type NoticeMode = 'each' | 'coalesced' | 'near' | 'off';

export interface ChildSettings {
  readonly role: 'producer' | 'worker';
  readonly url: string;
  readonly schema: string;
  readonly notices: NoticeMode;
  readonly durationMs: number;
  /** Every n-th schedule of a producer is a probe task, due soon; the rest are due in `bulkDelayMs`. */
  readonly probeEvery: number;
  readonly probeDelayMs: number;
  readonly probeSpreadMs: number;
  readonly bulkDelayMs: number;
}

export type ParentMessage = { readonly type: 'go' } | { readonly type: 'stop' };

export type ChildMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'produced'; readonly scheduled: number; readonly probes: number; readonly notifies: number }
  | { readonly type: 'claimed'; readonly lateness: number[]; readonly claims: number; readonly emptyClaims: number; readonly peers: number };
