/**
 * A test child process that prints `ready` once connected, waits for `go` on stdin, then prints its
 * result as one JSON line (the dedup race and the batch lock-order run). `result` settles on that
 * line, or rejects when the process ended without it — on 'close', not 'exit': 'exit' may come
 * before the last line on stdout has been read.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface ReportingChild<T> {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  readonly result: Promise<T>;
}

/** Starts `node script ...args`; `what` names it in the error when it ends before reporting. */
export function startReportingChild<T>(script: string, args: readonly string[], what: string): ReportingChild<T> {
  const child = spawn(process.execPath, [script, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  let onReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    onReady = resolve;
  });
  const result = new Promise<T>((resolve, reject) => {
    lines.on('line', (line) => (line === 'ready' ? onReady() : resolve(JSON.parse(line) as T)));
    child.on('close', (code) => reject(new Error(`${what} process exited with ${code} before reporting`)));
  });
  return { child, ready, result };
}

/**
 * Waits until every child is ready, sends them `go` at once and collects their results; any child
 * still running after `deadlineMs` is killed (its result then rejects).
 */
export async function runTogether<T>(children: readonly ReportingChild<T>[], deadlineMs: number): Promise<T[]> {
  const timer = setTimeout(() => {
    for (const c of children) c.child.kill('SIGKILL');
  }, deadlineMs);
  try {
    await Promise.all(children.map((c) => c.ready));
    for (const c of children) c.child.stdin?.write('go\n');
    return await Promise.all(children.map((c) => c.result));
  } finally {
    clearTimeout(timer);
    for (const c of children) c.child.stdin?.end();
  }
}
