/**
 * The timing wheel against a binary-heap timer queue, same inputs: `timers` timers due at ticks drawn
 * uniformly from [1, `spanTicks`), about `cancelShare` of them cancelled, then time advanced to the
 * end so every remaining timer fires. Operations = schedules + cancels + fires.
 *
 * - Wheel: `TimingWheel` of `@postpone/wheel` (3 levels × 64 slots, 1 tick = 1 ms: horizon 262 144
 *   ticks), O(1) schedule and cancel (Varghese & Lauck 1987).
 * - Heap: `Heap` of `heap-js` ordered by (due tick, sequence), O(log n) push and pop. Cancel marks the
 *   entry and the pop skips it (lazy deletion), the usual way for binary-heap timers; heap-js's own
 *   `remove` is a linear search, O(n) per cancel.
 */
import { TimingWheel, type TimerHandle } from '@postpone/wheel';
import { Heap } from 'heap-js';
import { mulberry32 } from '@postpone/testkit';

export interface TimerQueueInput {
  readonly dueTicks: Uint32Array;
  /** Indexes of the timers to cancel, in cancel order. */
  readonly cancels: Uint32Array;
  readonly spanTicks: number;
}

export interface TimerQueueResult {
  readonly structure: 'wheel' | 'heap';
  readonly timers: number;
  readonly cancelled: number;
  readonly fired: number;
  readonly ops: number;
  readonly seconds: number;
  readonly opsPerSecond: number;
  /** Phase times, ms. */
  readonly scheduleMs: number;
  readonly cancelMs: number;
  readonly fireMs: number;
}

/** The same inputs for both structures (seeded). */
export function timerQueueInput(timers: number, options: { spanTicks?: number; cancelShare?: number; seed?: number } = {}): TimerQueueInput {
  const spanTicks = options.spanTicks ?? 200_000;
  const cancelShare = options.cancelShare ?? 0.2;
  const rand = mulberry32(options.seed ?? 20_261_130);
  const dueTicks = new Uint32Array(timers);
  for (let i = 0; i < timers; i++) dueTicks[i] = 1 + Math.floor(rand() * (spanTicks - 1));
  const picked: number[] = [];
  for (let i = 0; i < timers; i++) if (rand() < cancelShare) picked.push(i);
  for (let i = picked.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [picked[i], picked[j]] = [picked[j] as number, picked[i] as number];
  }
  return { dueTicks, cancels: Uint32Array.from(picked), spanTicks };
}

function result(structure: 'wheel' | 'heap', input: TimerQueueInput, fired: number, t: readonly number[]): TimerQueueResult {
  const [t0, t1, t2, t3] = t as [number, number, number, number];
  const ops = input.dueTicks.length + input.cancels.length + fired;
  const seconds = (t3 - t0) / 1000;
  return {
    structure,
    timers: input.dueTicks.length,
    cancelled: input.cancels.length,
    fired,
    ops,
    seconds,
    opsPerSecond: ops / seconds,
    scheduleMs: t1 - t0,
    cancelMs: t2 - t1,
    fireMs: t3 - t2,
  };
}

/** Runs the input through the timing wheel. @throws Error when fired ≠ timers − cancelled */
export function runWheel(input: TimerQueueInput): TimerQueueResult {
  let fired = 0;
  const wheel = new TimingWheel<number>({ tickMs: 1, levels: 3, slotsPerLevel: 64, onFire: () => void fired++ });
  const n = input.dueTicks.length;
  const handles: TimerHandle<number>[] = new Array(n);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) handles[i] = wheel.scheduleAt(input.dueTicks[i] as number, i);
  const t1 = performance.now();
  for (const i of input.cancels) wheel.cancel(handles[i] as TimerHandle<number>);
  const t2 = performance.now();
  wheel.advanceTo(input.spanTicks);
  const t3 = performance.now();
  if (fired !== n - input.cancels.length) throw new Error(`wheel fired ${fired}, expected ${n - input.cancels.length}`);
  return result('wheel', input, fired, [t0, t1, t2, t3]);
}

interface HeapTimer {
  readonly due: number;
  readonly seq: number;
  cancelled: boolean;
}

/** Runs the input through the heap-js binary heap. @throws Error when fired ≠ timers − cancelled */
export function runHeap(input: TimerQueueInput): TimerQueueResult {
  let fired = 0;
  const heap = new Heap<HeapTimer>((a, b) => a.due - b.due || a.seq - b.seq);
  const n = input.dueTicks.length;
  const entries: HeapTimer[] = new Array(n);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const entry: HeapTimer = { due: input.dueTicks[i] as number, seq: i, cancelled: false };
    entries[i] = entry;
    heap.push(entry);
  }
  const t1 = performance.now();
  for (const i of input.cancels) (entries[i] as HeapTimer).cancelled = true;
  const t2 = performance.now();
  for (let top = heap.peek(); top !== undefined && top.due <= input.spanTicks; top = heap.peek()) {
    heap.pop();
    if (!top.cancelled) fired++;
  }
  const t3 = performance.now();
  if (fired !== n - input.cancels.length) throw new Error(`heap fired ${fired}, expected ${n - input.cancels.length}`);
  return result('heap', input, fired, [t0, t1, t2, t3]);
}
