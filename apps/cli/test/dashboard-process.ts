/**
 * The dashboard as the dashboard tests run it: the built `postpone` binary's `dashboard` command on
 * 127.0.0.1, port 0, in a child process (no port is fixed, nothing listens beyond loopback).
 */
import { type ChildProcess, spawn } from 'node:child_process';

export interface DashboardProcess {
  readonly child: ChildProcess;
  /** The URL the command printed (`http://127.0.0.1:<port>/`). */
  readonly url: string;
}

/**
 * Spawns `node <bin> <args>` with only PATH and `DATABASE_URL` in its environment; resolves once it
 * prints `listening on <url>`.
 * @throws Error when it exits first, or prints no URL within 30 s (then it is killed; its stderr in the message)
 */
export function startDashboardProcess(bin: string, args: readonly string[], databaseUrl: string): Promise<DashboardProcess> {
  const child = spawn(process.execPath, [bin, ...args], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL'); // nothing left running behind a failed start
      reject(new Error(`dashboard did not print its URL within 30 s; stderr: ${err}`));
    }, 30_000);
    child.stderr?.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolve({ child, url: m[1] as string });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`dashboard exited with ${code} before listening; stderr: ${err}`));
    });
  });
}

/** SIGTERM, then SIGKILL after 10 s; resolves with the exit code (null when killed by a signal). */
export function stopChild(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
    child.kill('SIGTERM');
  });
}
