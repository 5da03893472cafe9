/**
 * Hybrid discovery (docs/contract.md#discovery): a hierarchical timing wheel of the tasks due within its horizon,
 * read from the store and kept current by notifications, so a task is claimed within about a tick of
 * its due time while an idle worker barely touches the database.
 *
 * - **Load** (`peekDue`: no claim, no lease, an indexed read with a limit) on start, every
 *   `fallbackPollMs` (it finds what a notification missed), sooner when the last read was cut at its
 *   limit and time nears its end (`horizon`), after a pause (`gap`), and after the listener reconnected
 *   (`reconnect`: notifications sent meanwhile are lost). Each load is merged: timers of tasks the
 *   store no longer lists are dropped, notifications that came during the read are kept.
 * - **Placement** uses the database's due time and the database's now learnt with each read
 *   ({@link DatabaseClock}), mapped onto the monotonic clock: never the worker's wall clock, so a
 *   worker whose clock is off by minutes still claims on time. Timers are ceiled to the tick: never
 *   before the due time.
 * - **Notifications** (`listen`, when the store has it): a task scheduled within the loaded window is
 *   placed at once on every worker; a cancelled one is removed.
 * - **Claims**: a fired timer makes a claim owed; the worker loop claims with its free slots (the
 *   store's atomic claim, which takes whatever is due, in due order). An owed claim stays owed while
 *   no slot is free, and is paid as soon as one frees. A claim that came back full leaves one owed
 *   (more may be due); a claim that came back short settles every timer fired before it was sent.
 * - **Catch-up**: a claim is owed on start, and after a load everything already due fires at once.
 */
import type { ClaimedTask, PeekResult } from '@postpone/core';
import { anySignal, type LoadWindow, TaskWheel, type WaitingTask } from '@postpone/wheel';
import { DatabaseClock } from './database-clock.js';
import { type Discovery, type DiscoveryDeps, type DiscoveryStats, NO_REBUILDS, type RebuildReason } from './discovery.js';
import type { ResolvedHybridOptions } from './hybrid-options.js';
import { type NoticeSource, noticeSource, readNotice, type TaskNotice } from './notices.js';
import { PauseWatch } from './pause-watch.js';

/** Retry of a failed load or claim (or sooner, at `fallbackPollMs`). */
const RETRY_MS = 1_000;
/** When a load was cut at its limit: read again this long before time reaches its last due time. */
const HORIZON_LEAD_MS = 500;
/** ...but not more often than this. */
const MIN_RELOAD_GAP_MS = 100;
/**
 * Due times and the store's now arrive as whole ms, floored (the PostgreSQL store keeps µs): a task
 * listed as due at `t` may be due up to 1 ms later, so its timer is placed at `t + 1`.
 */
const DUE_RESOLUTION_MS = 1;
/** Notifications kept while the first load is in flight. */
const MAX_EARLY_NOTICES = 10_000;

/** Reasons that replace a pending periodic reload (a reload due to them must not be forgotten). */
const URGENT: ReadonlySet<RebuildReason> = new Set(['start', 'gap', 'reconnect']);

export class HybridDiscovery implements Discovery {
  readonly mode = 'hybrid' as const;
  private readonly wheel: TaskWheel;
  private readonly clock = new DatabaseClock();
  private readonly source: NoticeSource | null;
  private readonly pauses: PauseWatch;
  private readonly stopped = new AbortController();
  /** Loads list tasks due within this many ms: half the horizon, so the wheel can lag and still hold them. */
  private readonly lookAheadMs: number;
  private unlisten: (() => Promise<void>) | null = null;
  /** A timer fired (or the last claim came back full) since the last claim that came back short. */
  private owed = true;
  private fired = 0;
  private claimRetryAt = Number.NEGATIVE_INFINITY;
  /** Aborted when the wheel got a timer earlier than the loop's current sleep, or a load landed. */
  private changed = new AbortController();
  private sleepingUntil = Number.POSITIVE_INFINITY;
  /** What the last load covered; null before the first one landed. */
  private window: LoadWindow | null = null;
  private early: TaskNotice[] = [];
  private loading: Promise<void> | null = null;
  private reloadAgain: RebuildReason | null = null;
  private reloadTimer = new AbortController();
  private notices = 0;
  private readonly rebuilds: Record<RebuildReason, number> = { ...NO_REBUILDS };
  private stopping: Promise<void> | null = null;

  constructor(
    private readonly options: ResolvedHybridOptions,
    private readonly deps: DiscoveryDeps,
  ) {
    this.wheel = new TaskWheel({
      tickMs: options.tickMs,
      levels: options.levels,
      slotsPerLevel: options.slotsPerLevel,
      now: () => deps.pacing.now(),
      onFire: () => {
        this.fired += 1;
        this.owed = true;
      },
    });
    this.lookAheadMs = Math.floor(this.wheel.horizonMs / 2);
    this.source = noticeSource(deps.store);
    this.pauses = new PauseWatch(deps.pacing, options.pauseThresholdMs, (lateMs) => this.onPause(lateMs));
  }

  async start(): Promise<void> {
    this.pauses.start();
    await this.listen();
    await this.reload('start');
  }

  wantsClaim(): boolean {
    this.wheel.advance();
    return this.owed && this.deps.pacing.now() >= this.claimRetryAt;
  }

  claimStarted(): number {
    return this.fired;
  }

  claimFinished(token: number, asked: number, claimed: readonly ClaimedTask[] | null): void {
    if (claimed === null) {
      this.claimRetryAt = this.deps.pacing.now() + Math.min(RETRY_MS, this.options.fallbackPollMs);
      return;
    }
    this.claimRetryAt = Number.NEGATIVE_INFINITY;
    for (const task of claimed) this.wheel.remove(task.id);
    this.owed = claimed.length >= asked || this.fired !== token;
  }

  async wait(maxMs: number, wake: AbortSignal, full: boolean): Promise<void> {
    const { pacing } = this.deps;
    if (full) {
      await pacing.sleep(maxMs, wake);
      return;
    }
    const deadline = pacing.now() + maxMs;
    while (!wake.aborted && !this.stopped.signal.aborted) {
      this.wheel.advance();
      const now = pacing.now();
      if ((this.owed && now >= this.claimRetryAt) || now >= deadline) return;
      let until = this.owed ? Math.min(deadline, this.claimRetryAt) : deadline;
      until = Math.min(until, this.wheel.nextFireAt() ?? until);
      if (this.changed.signal.aborted) this.changed = new AbortController();
      const interrupt = anySignal([wake, this.changed.signal, this.stopped.signal]);
      this.sleepingUntil = until;
      await pacing.sleep(Math.max(1, Math.ceil(until - now)), interrupt.signal);
      this.sleepingUntil = Number.POSITIVE_INFINITY;
      interrupt.dispose();
    }
  }

  stats(): DiscoveryStats {
    return {
      mode: 'hybrid',
      wheelSize: this.wheel.size,
      fired: this.fired,
      rebuilds: { ...this.rebuilds },
      notices: this.notices,
      listening: this.unlisten !== null,
    };
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    this.stopped.abort();
    this.reloadTimer.abort();
    this.pauses.stop();
    await this.loading;
    const unlisten = this.unlisten;
    this.unlisten = null;
    if (unlisten !== null) await unlisten().catch((error: unknown) => this.deps.logger.warn({ err: error }, 'unlisten failed'));
  }

  /** Registers the notification listener if the store has one and it is not registered yet. */
  private async listen(): Promise<void> {
    if (this.source === null || this.unlisten !== null || this.stopped.signal.aborted) return;
    try {
      const unlisten = await this.source.listen((notice) => this.onNotice(notice), { onReconnect: () => void this.reload('reconnect') });
      if (this.stopped.signal.aborted) await unlisten().catch(() => undefined);
      else this.unlisten = unlisten;
      this.deps.succeeded();
    } catch (error) {
      this.deps.report(error, 'listen');
    }
  }

  private onNotice(value: unknown): void {
    if (this.stopped.signal.aborted) return;
    const notice = readNotice(value);
    if (notice === null) return;
    this.notices += 1;
    if (notice.op === 'cancelRequested') {
      this.deps.onCancelRequested(notice.id);
      return;
    }
    if (this.window === null) {
      if (this.early.length < MAX_EARLY_NOTICES) this.early.push(notice);
      return;
    }
    this.apply(notice, this.window);
  }

  private apply(notice: TaskNotice, window: LoadWindow): void {
    if (notice.op !== 'scheduled') {
      this.wheel.remove(notice.id);
      return;
    }
    // Beyond what the last load covered: a later load lists it (the wheel holds exactly that window).
    if (window.inclusive ? notice.dueAtMs > window.throughMs : notice.dueAtMs >= window.throughMs) return;
    const fireAt = this.fireTime(notice.dueAtMs);
    if (this.wheel.place(notice.id, notice.dueAtMs, fireAt) && fireAt < this.sleepingUntil) this.changed.abort();
  }

  /** The monotonic time at which a task due at `dueAtMs` (database clock) may be claimed: never before it is due. */
  private fireTime(dueAtMs: number): number {
    return this.clock.toMonotonic(dueAtMs + DUE_RESOLUTION_MS);
  }

  private onPause(lateMs: number): void {
    this.deps.logger.info({ lateMs: Math.round(lateMs) }, 'the worker was paused; rebuilding the wheel');
    this.changed.abort();
    void this.reload('gap');
  }

  /** Loads now, or right after the load in flight (whose read may predate what made this one necessary). */
  private reload(reason: RebuildReason): Promise<void> {
    if (this.stopped.signal.aborted) return Promise.resolve();
    if (this.loading !== null) {
      if (this.reloadAgain === null || !URGENT.has(this.reloadAgain)) this.reloadAgain = reason;
      return this.loading;
    }
    const run = async (): Promise<void> => {
      for (let next: RebuildReason | null = reason; next !== null && !this.stopped.signal.aborted; next = this.reloadAgain) {
        this.reloadAgain = null;
        await this.loadOnce(next);
      }
    };
    this.loading = run().finally(() => {
      this.loading = null;
    });
    return this.loading;
  }

  /** One read of the store, merged into the wheel. Never throws. */
  private async loadOnce(reason: RebuildReason): Promise<void> {
    const { pacing, store } = this.deps;
    // Listen first (again, after a failure): a notification sent after this point is not missed.
    if (reason !== 'reconnect') await this.listen();
    const token = this.wheel.beginLoad();
    const sentAt = pacing.now();
    let answer: PeekResult;
    try {
      answer = await store.peekDue({ withinMs: this.lookAheadMs, limit: this.options.loadLimit, ...this.deps.selection });
    } catch (error) {
      this.wheel.abandonLoad();
      this.deps.report(error, 'peekDue');
      this.scheduleReload(Math.min(RETRY_MS, this.options.fallbackPollMs), 'fallback');
      return;
    }
    if (this.stopped.signal.aborted) {
      this.wheel.abandonLoad();
      return;
    }
    this.deps.succeeded();
    const nowMs = answer.now.getTime();
    this.clock.sample(nowMs, sentAt, pacing.now());
    const tasks: WaitingTask[] = answer.tasks.map((t) => ({ id: t.id, dueAtMs: t.dueAt.getTime() }));
    const last = tasks.at(-1);
    const cut = last !== undefined && tasks.length >= this.options.loadLimit;
    const window: LoadWindow = cut ? { throughMs: last.dueAtMs, inclusive: false } : { throughMs: nowMs + this.lookAheadMs, inclusive: true };
    this.window = window;
    this.wheel.finishLoad(token, tasks, window, (ms) => this.fireTime(ms));
    const early = this.early;
    this.early = [];
    for (const notice of early) this.apply(notice, window);
    this.rebuilds[reason] += 1;
    this.deps.logger.debug({ reason, listed: tasks.length, size: this.wheel.size, cut }, 'wheel rebuilt from the store');
    this.deps.onRebuilt({ reason, listed: tasks.length, size: this.wheel.size });
    this.changed.abort();
    this.scheduleNextReload(cut ? this.clock.toMonotonic(window.throughMs) : null);
  }

  /** The periodic fallback; sooner when the last load was cut and time nears its end (`cutAt`, monotonic). */
  private scheduleNextReload(cutAt: number | null): void {
    const { fallbackPollMs } = this.options;
    const untilCut = cutAt === null ? Number.POSITIVE_INFINITY : cutAt - this.deps.pacing.now() - HORIZON_LEAD_MS;
    if (untilCut >= fallbackPollMs) this.scheduleReload(fallbackPollMs, 'fallback');
    else this.scheduleReload(Math.max(MIN_RELOAD_GAP_MS, untilCut), 'horizon');
  }

  private scheduleReload(inMs: number, reason: RebuildReason): void {
    this.reloadTimer.abort();
    if (this.stopped.signal.aborted) return;
    const timer = new AbortController();
    this.reloadTimer = timer;
    void this.deps.pacing.sleep(Math.ceil(inMs), timer.signal).then(() => {
      if (!timer.signal.aborted) void this.reload(reason);
    });
  }
}
