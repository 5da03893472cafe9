/**
 * Real worker processes for the measured runs: `n` children forked from `child.js`, each running one
 * system's own worker, reporting over IPC. The parent totals what they ran and collects lateness.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type ChildConfig, type ChildMessage, isChildMessage } from './protocol.js';
import { waitFor } from './util/wait.js';

const CHILD_SCRIPT = fileURLToPath(new URL('./child.js', import.meta.url));

export interface ProcessTimeouts {
  /** Loading and connecting (default 60 s: six processes start at once on two cores). */
  readonly readyMs?: number;
  /** From `go` to consuming (default 30 s). */
  readonly startMs?: number;
  /** From `stop` to exit, after which the process is killed (default 15 s). */
  readonly stopMs?: number;
}

interface Child {
  readonly proc: ChildProcess;
  readonly workerId: string;
  ready: boolean;
  started: boolean;
  stopped: boolean;
  exited: boolean;
}

export class WorkerProcesses {
  /** Tasks the handlers of all processes ran so far. */
  ran = 0;
  /** Lateness samples (ms) of timed tasks, in arrival order. */
  readonly lateness: number[] = [];
  /** CPU time (user + system, ms) the processes reported at their stop, summed. */
  cpuMs = 0;
  private readonly errors: string[] = [];
  private constructor(
    private readonly children: Child[],
    private readonly timeouts: Required<ProcessTimeouts>,
  ) {}

  /**
   * Forks `count` processes with `config` (each gets its own `workerId`) and waits until each has
   * loaded its system and connected.
   * @param execPath the `node` binary the processes run on (default: this process's)
   * @throws Error when a process reports an error or is not ready in time (all are killed)
   */
  static async spawn(count: number, config: Omit<ChildConfig, 'workerId'>, timeouts: ProcessTimeouts = {}, execPath = process.execPath): Promise<WorkerProcesses> {
    const children: Child[] = [];
    const pool = new WorkerProcesses(children, { readyMs: 60_000, startMs: 30_000, stopMs: 15_000, ...timeouts });
    for (let i = 0; i < count; i++) {
      const workerId = `${config.system}-${config.setting}-w${i + 1}`;
      const proc = fork(CHILD_SCRIPT, [], {
        env: { ...process.env, POSTPONE_BENCH_CHILD: JSON.stringify({ ...config, workerId }) },
        execPath,
        // POSTPONE_BENCH_CPU_PROF=dir: each process writes a V8 CPU profile there when it exits
        // (`node --cpu-prof`); `node apps/bench/dist/report/cpu-profile.js dir` sums it up.
        execArgv: process.env.POSTPONE_BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.POSTPONE_BENCH_CPU_PROF}`] : [],
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
        serialization: 'advanced',
      });
      const child: Child = { proc, workerId, ready: false, started: false, stopped: false, exited: false };
      let stderr = '';
      proc.stderr?.on('data', (chunk: Buffer) => {
        stderr = (stderr + chunk.toString()).slice(-4000);
      });
      proc.on('message', (m) => {
        if (isChildMessage(m)) pool.onMessage(child, m);
      });
      proc.on('exit', (code, signal) => {
        child.exited = true;
        if (!child.stopped) pool.errors.push(`${workerId} exited early (code ${code}, signal ${signal}): ${stderr.trim().slice(-1500)}`);
      });
      children.push(child);
    }
    try {
      await pool.waitAll((c) => c.ready, pool.timeouts.readyMs, 'worker processes ready');
    } catch (error) {
      pool.kill();
      throw error;
    }
    return pool;
  }

  private onMessage(child: Child, m: ChildMessage): void {
    switch (m.type) {
      case 'ready':
        child.ready = true;
        break;
      case 'started':
        child.started = true;
        break;
      case 'ran':
        this.ran += m.count;
        for (const ms of m.lateness) this.lateness.push(ms);
        break;
      case 'stopped':
        child.stopped = true;
        this.cpuMs += m.cpuMs;
        break;
      case 'error':
        this.errors.push(`${child.workerId}: ${m.message}`);
        break;
    }
  }

  private async waitAll(pred: (c: Child) => boolean, timeoutMs: number, what: string): Promise<void> {
    await waitFor(
      () => {
        this.throwIfFailed();
        return this.children.every(pred);
      },
      { timeoutMs, intervalMs: 5, what },
    );
  }

  /** @throws Error with the first error a process reported (or its early exit) */
  throwIfFailed(): void {
    if (this.errors.length > 0) throw new Error(`worker process failed: ${this.errors[0]}`);
  }

  /** Tells every process to start consuming and waits until all are. */
  async go(): Promise<void> {
    for (const c of this.children) c.proc.send({ type: 'go' });
    await this.waitAll((c) => c.started, this.timeouts.startMs, 'worker processes started');
  }

  /** Stops every process gracefully; kills any still running after the stop timeout. */
  async stop(): Promise<void> {
    for (const c of this.children) if (!c.exited && c.proc.connected) c.proc.send({ type: 'stop' });
    try {
      await waitFor(() => this.children.every((c) => c.exited), { timeoutMs: this.timeouts.stopMs, intervalMs: 10, what: 'worker processes to exit' });
    } catch {
      this.kill();
    }
  }

  /** SIGKILLs every process still running. */
  kill(): void {
    for (const c of this.children) if (!c.exited) c.proc.kill('SIGKILL');
  }
}
