/**
 * One child process started with `child_process.fork`: its events (IPC) in an {@link EventLog},
 * control messages to it, real signals (`SIGKILL`, `SIGSTOP`, `SIGCONT`), and its exit code/signal.
 *
 * A `.ts` entry runs through the `tsx` loader (tests run from source); a `.js` entry runs as is
 * (the compiled `dist`).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { constants } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { EventLog, type Logged } from './event-log.js';
import { withTimeout } from '@postpone/testkit';

/** The end of a process: exactly one of `code` and `signal` is set. */
export interface ExitStatus {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** A shell-style exit status: the code, or 128 + the signal number (SIGKILL → 137). */
export function shellExitStatus(status: ExitStatus): number {
  if (status.code !== null) return status.code;
  const number = status.signal ? constants.signals[status.signal] : undefined;
  return number === undefined ? -1 : 128 + number;
}

export interface SpawnOptions {
  /** A label for messages (e.g. the worker name). */
  readonly name: string;
  /** Extra environment variables (added to the parent's). */
  readonly env?: Readonly<Record<string, string>>;
  /** Keep at most this many characters of stderr for error messages (default 8 000). */
  readonly stderrLimit?: number;
  /**
   * Run node through this command, which must exec it keeping the IPC descriptor and environment:
   * e.g. `['ip', 'netns', 'exec', ns]` puts the process on a network-namespace host (`NetnsHosts`).
   */
  readonly command?: readonly string[];
}

type ExitEvent = { readonly type: 'exited'; readonly code: number | null; readonly signal: NodeJS.Signals | null };

function execArgvFor(entry: string): string[] {
  if (!entry.endsWith('.ts')) return [];
  const tsx = createRequire(import.meta.url).resolve('tsx');
  return ['--import', pathToFileURL(tsx).href];
}

export class ChildHandle<E extends { readonly type: string }, C extends object> {
  readonly name: string;
  readonly events = new EventLog<E | ExitEvent>();
  /** Resolves when the process has ended. */
  readonly exited: Promise<ExitStatus>;
  private readonly child: ChildProcess;
  private stderrText = '';
  private exitStatus: ExitStatus | undefined;

  private constructor(entry: string, options: SpawnOptions) {
    this.name = options.name;
    const limit = options.stderrLimit ?? 8_000;
    const [via, ...viaArgs] = options.command ?? [];
    this.child = fork(entry, [], {
      env: { ...process.env, ...options.env },
      ...(via === undefined ? { execArgv: execArgvFor(entry) } : { execPath: via, execArgv: [...viaArgs, process.execPath, ...execArgvFor(entry)] }),
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
      serialization: 'json',
    });
    this.child.stderr?.setEncoding('utf8');
    this.child.stderr?.on('data', (chunk: string) => {
      this.stderrText = (this.stderrText + chunk).slice(-limit);
    });
    this.child.on('message', (message) => {
      if (typeof message === 'object' && message !== null && 'type' in message) this.events.push(message as E);
    });
    this.exited = new Promise((resolve) => {
      // 'close' (not 'exit'): it comes after stdio and the IPC channel are drained, so no event is lost.
      this.child.once('close', (code, signal) => {
        this.exitStatus = { code, signal };
        const detail = this.stderrText.trim() ? `; stderr: ${this.stderrText.trim().slice(-2_000)}` : '';
        this.events.close(`process ${this.name} exited (code ${code}, signal ${signal})${detail}`, { type: 'exited', code, signal });
        resolve(this.exitStatus);
      });
    });
    // A failed spawn emits 'error' and then (usually) 'exit'; keep it from crashing the test runner.
    this.child.on('error', (error) => {
      this.stderrText += `\n[spawn error] ${error.message}`;
    });
  }

  /**
   * Starts `entry` (a path or `file:` URL) as a child process with an IPC channel.
   * @throws Error when the entry cannot be forked
   */
  static spawn<E extends { readonly type: string }, C extends object>(entry: string | URL, options: SpawnOptions): ChildHandle<E, C> {
    const path = typeof entry === 'string' ? entry : fileURLToPath(entry);
    return new ChildHandle<E, C>(path, options);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** True until the process has exited. */
  get alive(): boolean {
    return this.exitStatus === undefined;
  }

  /** The exit status, once exited. */
  get status(): ExitStatus | undefined {
    return this.exitStatus;
  }

  /** The tail of the child's stderr. */
  get stderr(): string {
    return this.stderrText;
  }

  /**
   * The first event (from `fromSeq` on) of the given type that satisfies `predicate`.
   * @throws WaitTimeoutError at the deadline; Error when the process exits first
   */
  waitFor<T extends E['type']>(
    type: T,
    predicate: (event: Logged<Extract<E, { type: T }>>) => boolean = () => true,
    timeoutMs = 10_000,
    fromSeq = 0,
  ): Promise<Logged<Extract<E, { type: T }>>> {
    return this.waitForNth(type, 1, predicate, timeoutMs, fromSeq);
  }

  /** Like {@link waitFor}, for the `nth` matching event (1 = the first). */
  waitForNth<T extends E['type']>(
    type: T,
    nth: number,
    predicate: (event: Logged<Extract<E, { type: T }>>) => boolean = () => true,
    timeoutMs = 10_000,
    fromSeq = 0,
  ): Promise<Logged<Extract<E, { type: T }>>> {
    const match = (event: Logged<E | ExitEvent>): boolean =>
      event.type === type && predicate(event as unknown as Logged<Extract<E, { type: T }>>);
    const what = nth === 1 ? `${this.name}: ${type}` : `${this.name}: ${type} #${nth}`;
    return this.events.waitFor(match, timeoutMs, what, fromSeq, nth) as unknown as Promise<Logged<Extract<E, { type: T }>>>;
  }

  /** Events of one type received so far. */
  eventsOf<T extends E['type']>(type: T): Logged<Extract<E, { type: T }>>[] {
    return this.events.filter((event) => event.type === type) as unknown as Logged<Extract<E, { type: T }>>[];
  }

  /**
   * Sends a control message over IPC and resolves once it was handed to the channel.
   * @throws Error when the process has exited or the channel is closed
   */
  send(control: C): Promise<void> {
    return new Promise((resolve, reject) => {
      if (!this.alive || !this.child.connected) {
        reject(new Error(`process ${this.name} is not connected`));
        return;
      }
      this.child.send(control, (error) => (error ? reject(error) : resolve()));
    });
  }

  /** Sends a signal; returns false when the process had already exited. */
  signal(signal: NodeJS.Signals): boolean {
    if (!this.alive) return false;
    return this.child.kill(signal);
  }

  /** `kill -9`: the process ends without running any code. Resolves with its exit status. */
  async kill9(timeoutMs = 10_000): Promise<ExitStatus> {
    this.signal('SIGKILL');
    return await withTimeout(this.exited, timeoutMs, `${this.name} to die after SIGKILL`);
  }

  /** Freezes the process (`SIGSTOP`): no timer, no I/O callback runs until `sigcont`. */
  sigstop(): void {
    if (!this.signal('SIGSTOP')) throw new Error(`process ${this.name} is not running`);
  }

  /** Resumes a stopped process (`SIGCONT`). */
  sigcont(): void {
    if (!this.signal('SIGCONT')) throw new Error(`process ${this.name} is not running`);
  }

  /** Waits for the process to end; kills it with SIGKILL when it does not end within `timeoutMs`. */
  async waitExit(timeoutMs: number): Promise<ExitStatus> {
    try {
      return await withTimeout(this.exited, timeoutMs, `${this.name} to exit`);
    } catch {
      return await this.kill9();
    }
  }
}
