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
 *   and each claim that took a task (its `claimedAt`; {@link DatabaseClock}: the tightest recent bound
 *   wins, and timers move when it tightens by a tick), mapped onto the monotonic clock: never the worker's wall clock, so a
 *   worker whose clock is off by minutes still claims on time. Timers are ceiled to the tick: never
 *   before the due time.
 * - **Notifications** (`listen`, when the store has it): a task scheduled within the loaded window is
 *   placed at once on every worker; a cancelled one is removed. A queue or kind paused or resumed
 *   (docs/contract.md#pause-and-resume) makes a load at once (`pauseNotice`): `peekDue` lists no paused
 *   task, so a paused task's timer is dropped and a resumed one's placed. While the last load said the
 *   whole selection is paused (`PeekResult.paused`), `scheduled` notices are not placed: they would
 *   only wake claims that take nothing.
 * - **Claims**: a fired timer makes a claim owed; the worker loop claims with its free slots (the
 *   store's atomic claim, which takes whatever is due, in due order). An owed claim stays owed while
 *   no slot is free, and is paid as soon as one frees. A claim that came back full leaves one owed
 *   when more is known to be due (a fired timer it did not take, a backlog being helped, or a cut
 *   load: the wheel may not hold everything); a claim that came back short settles every timer fired
 *   before it was sent.
 * - **Catch-up**: after a load everything already due fires at once; a claim is owed on start only
 *   when the first load failed or was cut at its limit.
 * - **Backlog** (a load cut at its limit whose every listed task is already due: more is due than one
 *   load lists, as after an outage): no timer is placed (a timer per task would only fire at once),
 *   the worker claims back to back as a polling worker does — each full claim owes the next — and
 *   reloads at `fallbackPollMs` instead of every {@link MIN_RELOAD_GAP_MS}; the first claim that comes
 *   back short ends the backlog and reloads, which places the timers of what is due next.
 * - **Sharing** (docs/contract.md#discovery-sharing; when the store can announce workers): the workers
 *   of one group (same queue and kinds) learn each other from notices (`hello` at start, answered by
 *   the others; refreshed every {@link ANNOUNCE_MS}). Due time is cut into slices of
 *   {@link SLICE_TICKS} ticks, each with one preferred worker by rendezvous hashing ({@link Peers});
 *   a fired timer makes a claim owed only on its slice's preferred worker. Another worker claims it
 *   only when a load shows it still waiting {@link FALLBACK_GRACE_MS} past its due time (the preferred
 *   worker died, stalled or was full), and then prefers others over that worker until it is heard
 *   from again. So the claims grow with the due slices, not with the workers, and a dead worker
 *   costs lateness (up to about `fallbackPollMs`), never a task: the claim itself is unchanged.
 * - **Helping**: a claim that took another worker's task more than {@link HELP_LATE_MS} after its due
 *   time shows a backlog there; for {@link HELP_MS} this worker then claims at every fired timer, so
 *   its free slots drain the backlog (work-conserving under saturation; some claims may come back empty).
 * - **Bursts**: when {@link BURST_TASKS} timers of one other worker's slice fired here, one claim is owed
 *   here {@link HELP_LATE_MS} later: it helps (above) when that worker could not take them all in time.
 * - **Gathering**: an owed claim waits for the worker's next timer when that fires within
 *   {@link GATHER_TICKS} ticks of the first, so one claim takes tasks due close together.
 */
import type { ClaimedTask, PeekResult } from '@postpone/core';
import { anySignal, type LoadWindow, TaskWheel, type WaitingTask } from '@postpone/wheel';
import { DatabaseClock } from './database-clock.js';
import { type ClaimCause, type ClaimCount, type Discovery, type DiscoveryDeps, type DiscoveryStats, NO_REBUILDS, type RebuildReason } from './discovery.js';
import type { ResolvedHybridOptions } from './hybrid-options.js';
import { type NoticeSource, noticeSource, readNotice, readWorkerNotice, type TaskNotice } from './notices.js';
import { PauseWatch } from './pause-watch.js';
import { hashText, Peers } from './peers.js';

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

/** The reason `changed` aborts with (a notice moved the next timer): spares the DOMException `abort()` builds per notice. */
const CHANGED = Symbol('changed');

/** A slice of due time with one preferred worker, in ticks (64 ms at the default 2 ms tick). */
export const SLICE_TICKS = 32;
/** An owed claim waits for the next timer when it fires within this many ticks of the first one. */
export const GATHER_TICKS = 2;
/** A task of another worker's slice still waiting this long after its due time is claimed here. */
export const FALLBACK_GRACE_MS = 500;
/** A claim that took another worker's task this late (claimed at − due at) shows a backlog: help for {@link HELP_MS}. */
export const HELP_LATE_MS = 50;
/** While helping, every fired timer makes a claim owed, as without sharing. */
export const HELP_MS = 100;
/**
 * A burst: this many timers of one other worker's slice fired here. More than that worker may take in
 * one claim, so after {@link HELP_LATE_MS} one claim is owed here too: when it takes that worker's tasks
 * late, helping goes on; when they were taken, it comes back short (or empty) and settles.
 */
export const BURST_TASKS = 32;
/** Period of a worker's presence notice; a worker not heard from for {@link PEER_TTL_MS} is forgotten. */
export const ANNOUNCE_MS = 15_000;
export const PEER_TTL_MS = 3 * ANNOUNCE_MS + 5_000;
/** Delay of the answer to a `hello` (one answer covers the hellos of a burst of starts). */
const REPLY_DELAY_MS = 20;

/** Reasons that replace a pending periodic reload (a reload due to them must not be forgotten). */
const URGENT: ReadonlySet<RebuildReason> = new Set(['start', 'gap', 'reconnect', 'pauseNotice']);

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
  /** Claim without gathering (start, a full claim, a fallback). */
  private urgent = true;
  /** Monotonic time of the first owed timer not yet covered by a claim. */
  private owedSince = Number.NEGATIVE_INFINITY;
  /** First owed timer since the claim in flight was sent (NaN: none). */
  private owedSinceSent = Number.NaN;
  /** Owed timers not yet settled by a claim: task id → why it made a claim owed (`own`: its slice is this worker's). */
  private readonly pending = new Map<string, 'own' | 'fallback' | 'help'>();
  /** Why a claim is owed when no timer is pending (start, a full claim, a failed one). */
  private owedCause: ClaimCause = 'start';
  /** Why the claim in flight was sent. */
  private sentCause: ClaimCause = 'start';
  private readonly byCause: Record<ClaimCause, { claims: number; empty: number }> = {
    own: { claims: 0, empty: 0 },
    fallback: { claims: 0, empty: 0 },
    help: { claims: 0, empty: 0 },
    full: { claims: 0, empty: 0 },
    start: { claims: 0, empty: 0 },
    retry: { claims: 0, empty: 0 },
  };
  /** What the claim in flight settles: the ids pending when it was sent. */
  private sent: string[] = [];
  private claims = 0;
  /** Monotonic time the claim in flight was sent (its answer is a sample of the database clock). */
  private claimSentAt = 0;
  /** The database clock's offset when the wheel's timers were last placed by a load or moved. */
  private placedOffset = Number.POSITIVE_INFINITY;
  private lastReannounceAt = Number.NEGATIVE_INFINITY;
  private fired = 0;
  private deferred = 0;
  private fallbacks = 0;
  private helped = 0;
  /** The other worker's slice whose deferred timers are being counted for a burst, and how many fired. */
  private burstSlice = Number.NaN;
  private burstCount = 0;
  /** `claimRetryAt` holds a burst's helping claim back (a timer of this worker's own lifts it). */
  private burstWait = false;
  private readonly peers: Peers;
  private readonly group: string;
  private readonly gatherMs: number;
  private replyPending = false;
  /** Until then (monotonic) this worker claims at every fired timer: its last claim found others' tasks overdue. */
  private helpUntil = Number.NEGATIVE_INFINITY;
  /** Tasks the last load listed as still waiting {@link FALLBACK_GRACE_MS} past their due time. */
  private overdue = new Set<string>();
  private claimRetryAt = Number.NEGATIVE_INFINITY;
  /** Aborted when the wheel got a timer earlier than the loop's current sleep, or a load landed. */
  private changed = new AbortController();
  private sleepingUntil = Number.POSITIVE_INFINITY;
  /** What the last load covered; null before the first one landed. */
  private window: LoadWindow | null = null;
  private early: TaskNotice[] = [];
  /** The last load found a backlog (cut at its limit, every listed task already due): claim without timers. */
  private backlog = false;
  /** The last load said nothing of this worker's selection can be claimed (its queue, or every kind, is paused). */
  private selectionPaused = false;
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
      onFire: (id, dueAtMs) => this.onFire(id, dueAtMs),
    });
    const workerId = deps.workerId ?? `hybrid-${Math.random().toString(36).slice(2)}`;
    this.peers = new Peers(workerId, options.tickMs * SLICE_TICKS, PEER_TTL_MS, () => deps.pacing.now());
    const kinds = deps.selection?.kinds === undefined ? null : [...deps.selection.kinds].sort();
    this.group = hashText(JSON.stringify([deps.selection?.queue ?? null, kinds])).toString(36);
    this.gatherMs = options.tickMs * GATHER_TICKS;
    this.lookAheadMs = Math.floor(this.wheel.horizonMs / 2);
    this.source = noticeSource(deps.store);
    this.pauses = new PauseWatch(deps.pacing, options.pauseThresholdMs, (lateMs) => this.onPause(lateMs));
  }

  async start(): Promise<void> {
    this.pauses.start();
    await this.listen();
    await this.reload('start');
    // Announced once the wheel is loaded: others prefer this worker only when it can claim.
    if (this.unlisten !== null) void this.announce(true);
    void this.announceEvery();
  }

  wantsClaim(): boolean {
    this.wheel.advance();
    return this.ready(this.deps.pacing.now());
  }

  claimStarted(): number {
    this.urgent = false;
    this.owed = false;
    this.owedSinceSent = Number.NaN;
    this.sent = [...this.pending.keys()];
    // The strongest cause among the owed timers (own > fallback > help), in one pass that stops at `own`.
    let timerCause: 'own' | 'fallback' | 'help' | null = null;
    for (const cause of this.pending.values()) {
      if (cause === 'own') {
        timerCause = cause;
        break;
      }
      if (cause === 'fallback' || timerCause === null) timerCause = cause;
    }
    this.sentCause = this.owedCause !== 'start' || timerCause === null ? this.owedCause : timerCause;
    this.owedCause = 'start';
    this.byCause[this.sentCause].claims += 1;
    this.claims += 1;
    this.claimSentAt = this.deps.pacing.now();
    return this.claims;
  }

  claimFinished(token: number, asked: number, claimed: readonly ClaimedTask[] | null): void {
    const now = this.deps.pacing.now();
    if (claimed === null || token !== this.claims) {
      this.claimRetryAt = now + Math.min(RETRY_MS, this.options.fallbackPollMs);
      this.owed = this.urgent = true;
      this.owedCause = 'retry';
      this.burstWait = false;
      return;
    }
    const first = claimed[0];
    if (first === undefined) this.byCause[this.sentCause].empty += 1;
    // The claim's `claimedAt` is the database's now while the claim ran: a sample of the clock as good
    // as a load's and far more frequent under load, so timers are placed on a tighter offset.
    else {
      this.clock.sample(first.claimedAt.getTime(), this.claimSentAt, now);
      // Tighter by a tick or more than when the timers were placed: they would fire that much late.
      const offset = this.clock.offsetMs ?? this.placedOffset;
      if (offset - this.placedOffset >= this.options.tickMs) {
        this.placedOffset = offset;
        this.wheel.retime((ms) => this.fireTime(ms));
      }
    }
    this.claimRetryAt = Number.NEGATIVE_INFINITY;
    this.burstWait = false;
    let othersLate = false;
    for (const task of claimed) {
      this.wheel.remove(task.id);
      this.pending.delete(task.id);
      const dueAtMs = task.dueAt.getTime();
      if (task.claimedAt.getTime() - dueAtMs > HELP_LATE_MS && this.peers.ownerOf(dueAtMs) !== this.peers.self) othersLate = true;
    }
    // Another worker's tasks were waiting: it is busy, stalled or gone. Claim at every timer for a while,
    // so free slots here take the backlog instead of waiting for their own slices.
    if (othersLate) this.helpUntil = now + HELP_MS;
    const full = claimed.length >= asked;
    // A short claim ends a backlog: reload soon, so the wheel holds what is due next.
    if (this.backlog && !full) {
      this.backlog = false;
      this.scheduleReload(MIN_RELOAD_GAP_MS, 'horizon');
    }
    // A short claim settles what was owed when it was sent: a task it did not take was taken by another
    // worker (or cancelled). One of this worker's own slices taken by another: it may think this worker gone.
    let taken = false;
    for (const id of this.sent) {
      if (this.pending.get(id) === 'own') taken = true;
      if (!full) this.pending.delete(id);
    }
    this.sent = [];
    if (taken && !full && now - this.lastReannounceAt >= this.options.fallbackPollMs) {
      this.lastReannounceAt = now;
      void this.announce(false);
    }
    // A full claim leaves one owed only when more may be due that this worker should take: a fired timer
    // it did not take, a backlog it helps with, or tasks the wheel may not hold (the last load was cut).
    // Else the wheel's next timer makes the next claim (a claim owed blindly comes back empty).
    if (full && (this.pending.size > 0 || now < this.helpUntil || this.window?.inclusive === false)) {
      this.owed = this.urgent = true;
      this.owedCause = 'full';
    } else if (full) this.owed = false;
    else {
      this.owed = this.pending.size > 0;
      if (this.owed) this.owedSince = Number.isNaN(this.owedSinceSent) ? now : this.owedSinceSent;
    }
  }

  /** A claim is owed and may go now: at once when urgent, else when no timer fires within the gathering. */
  private ready(now: number): boolean {
    if (!this.owed || now < this.claimRetryAt) return false;
    if (this.urgent || now >= this.owedSince + this.gatherMs) return true;
    const next = this.wheel.nextFireAt();
    return next === undefined || next > this.owedSince + this.gatherMs;
  }

  /** A timer fired: owed here when this worker is its slice's preferred one, or it is overdue past the grace. */
  private onFire(id: string, dueAtMs: number): void {
    this.fired += 1;
    const now = this.deps.pacing.now();
    const owner = Number.isNaN(dueAtMs) ? this.peers.self : this.peers.ownerOf(dueAtMs);
    const mine = owner === this.peers.self;
    let cause: 'own' | 'fallback' | 'help' = 'own';
    if (!mine) {
      // Only a load proves the task still waits (a late fire may be this worker's own stall).
      if (this.overdue.delete(id)) {
        // Still waiting well past its due time: its preferred worker died, stalled or is full.
        this.peers.suspect(owner);
        this.fallbacks += 1;
        this.urgent = true;
        cause = 'fallback';
      } else if (now >= this.helpUntil) {
        this.deferred += 1;
        this.countBurst(dueAtMs, now);
        return;
      } else {
        this.helped += 1;
        cause = 'help';
      }
    }
    this.pending.set(id, cause);
    if (this.burstWait) {
      this.burstWait = false;
      this.claimRetryAt = Number.NEGATIVE_INFINITY;
    }
    if (Number.isNaN(this.owedSinceSent)) this.owedSinceSent = now;
    if (!this.owed) {
      this.owed = true;
      this.owedSince = now;
    }
  }

  /** Counts a deferred timer; at {@link BURST_TASKS} in one slice a claim is owed here, {@link HELP_LATE_MS} from now. */
  private countBurst(dueAtMs: number, now: number): void {
    const slice = this.peers.sliceOf(dueAtMs);
    if (slice !== this.burstSlice) {
      this.burstSlice = slice;
      this.burstCount = 0;
    }
    this.burstCount += 1;
    if (this.burstCount !== BURST_TASKS || this.owed) return;
    this.owed = this.urgent = true;
    this.owedCause = 'help';
    this.claimRetryAt = now + HELP_LATE_MS;
    this.burstWait = true;
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
      if (this.ready(now) || now >= deadline) return;
      let until = this.owed ? Math.min(deadline, Math.max(this.claimRetryAt, this.urgent ? now : this.owedSince + this.gatherMs)) : deadline;
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
      peers: this.peers.size,
      deferred: this.deferred,
      fallbacks: this.fallbacks,
      helped: this.helped,
      claimsByCause: Object.fromEntries(Object.entries(this.byCause).map(([cause, count]) => [cause, { ...count }])) as Record<ClaimCause, ClaimCount>,
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
      const onWorker = this.source.announceWorker === undefined ? {} : { onWorker: (notice: unknown) => this.onWorker(notice) };
      const unlisten = await this.source.listen((notice) => this.onNotice(notice), {
        onReconnect: () => {
          void this.announce(true);
          void this.reload('reconnect');
        },
        onPause: () => {
          if (!this.stopped.signal.aborted) void this.reload('pauseNotice');
        },
        ...onWorker,
      });
      if (this.stopped.signal.aborted) await unlisten().catch(() => undefined);
      else this.unlisten = unlisten;
      this.deps.succeeded();
    } catch (error) {
      this.deps.report(error, 'listen');
    }
  }

  /** A worker's presence: known from now on if it is of this worker's group; a `hello` is answered. */
  private onWorker(value: unknown): void {
    const presence = readWorkerNotice(value);
    if (presence === null || presence.group !== this.group || presence.worker === this.peers.self || this.stopped.signal.aborted) return;
    this.peers.heard(presence.worker);
    if (!presence.hello || this.replyPending) return;
    this.replyPending = true;
    void this.deps.pacing.sleep(REPLY_DELAY_MS, this.stopped.signal).then(() => {
      this.replyPending = false;
      return this.announce(false);
    });
  }

  /** Sends this worker's presence notice. Never throws: a lost notice costs duplicate claims, not tasks. */
  private async announce(hello: boolean): Promise<void> {
    const source = this.source;
    if (source?.announceWorker === undefined || this.stopped.signal.aborted) return;
    try {
      await source.announceWorker({ worker: this.peers.self, group: this.group, hello });
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'announcing the worker failed; other workers claim its share meanwhile');
    }
  }

  /** Refreshes this worker's presence every {@link ANNOUNCE_MS} until stopped. */
  private async announceEvery(): Promise<void> {
    if (this.source?.announceWorker === undefined) return;
    while (!this.stopped.signal.aborted) {
      await this.deps.pacing.sleep(ANNOUNCE_MS, this.stopped.signal);
      if (!this.stopped.signal.aborted && this.unlisten !== null) await this.announce(false);
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
    // Paused: a claim would take nothing (the store leaves paused work out); a resume notice reloads.
    // In a backlog the back-to-back claims take it in due order: no timer.
    if (this.selectionPaused || this.backlog) return;
    // Beyond what the last load covered: a later load lists it (the wheel holds exactly that window).
    if (window.inclusive ? notice.dueAtMs > window.throughMs : notice.dueAtMs >= window.throughMs) return;
    const fireAt = this.fireTime(notice.dueAtMs);
    if (this.wheel.place(notice.id, notice.dueAtMs, fireAt) && fireAt < this.sleepingUntil) this.changed.abort(CHANGED);
  }

  /** The monotonic time at which a task due at `dueAtMs` (database clock) may be claimed: never before it is due. */
  private fireTime(dueAtMs: number): number {
    return this.clock.toMonotonic(dueAtMs + DUE_RESOLUTION_MS);
  }

  private onPause(lateMs: number): void {
    this.deps.logger.info({ lateMs: Math.round(lateMs) }, 'the worker was paused; rebuilding the wheel');
    this.changed.abort(CHANGED);
    void this.announce(false);
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
    // The store answers again: a claim that failed need not wait out its retry pause (the backlog of
    // an outage is claimed as soon as the database is back, not up to RETRY_MS later).
    if (this.owedCause === 'retry') this.claimRetryAt = Number.NEGATIVE_INFINITY;
    this.deps.succeeded();
    const nowMs = answer.now.getTime();
    this.clock.sample(nowMs, sentAt, pacing.now());
    const tasks: WaitingTask[] = answer.tasks.map((t) => ({ id: t.id, dueAtMs: t.dueAt.getTime() }));
    this.overdue = new Set(tasks.filter((t) => t.dueAtMs <= nowMs - FALLBACK_GRACE_MS).map((t) => t.id));
    const last = tasks.at(-1);
    const cut = last !== undefined && tasks.length >= this.options.loadLimit;
    const window: LoadWindow = cut ? { throughMs: last.dueAtMs, inclusive: false } : { throughMs: nowMs + this.lookAheadMs, inclusive: true };
    this.window = window;
    this.selectionPaused = answer.paused === true;
    // More is due than one load lists: claim back to back instead of placing a timer per task (the
    // merge drops the timers of the listed window, all due: the claims take them in due order).
    this.backlog = cut && last.dueAtMs <= nowMs;
    this.wheel.finishLoad(token, this.backlog ? [] : tasks, window, (ms) => this.fireTime(ms));
    if (this.backlog) {
      this.owed = this.urgent = true;
      this.owedCause = 'full';
    }
    this.placedOffset = this.clock.offsetMs ?? this.placedOffset;
    // The start's catch-up claim is owed only when the wheel may not hold everything due: every listed
    // task already due fires at the next advance anyway.
    if (reason === 'start' && !cut && this.owedCause === 'start' && this.pending.size === 0 && this.claims === 0) this.owed = false;
    const early = this.early;
    this.early = [];
    for (const notice of early) this.apply(notice, window);
    this.rebuilds[reason] += 1;
    this.deps.logger.debug({ reason, listed: tasks.length, size: this.wheel.size, cut }, 'wheel rebuilt from the store');
    this.deps.onRebuilt({ reason, listed: tasks.length, size: this.wheel.size });
    this.changed.abort(CHANGED);
    this.scheduleNextReload(cut && !this.backlog ? this.clock.toMonotonic(window.throughMs) : null);
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
