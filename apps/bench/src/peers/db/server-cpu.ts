/**
 * CPU time of the whole PostgreSQL server, read from Linux's `/proc` (proc(5): `/proc/<pid>/stat`
 * fields 14–17, utime, stime, cutime, cstime, in clock ticks): the postmaster, every process it
 * started that is alive (backends, autovacuum, checkpointer, WAL writer…), and through the
 * postmaster's cutime + cstime every child it has reaped. The difference of two readings is what
 * the server spent between them — statement execution (`pg_stat_statements.total_exec_time`) and
 * everything it leaves out: parse, plan, protocol and socket work, commit, autovacuum, background
 * writes.
 *
 * Only for a server on this host (the bench's embedded one); elsewhere every reading is NaN.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** proc(5): `sysconf(_SC_CLK_TCK)`, read once (100 on every common Linux). */
let ticksPerSecond: number | undefined;
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

interface ProcStat {
  readonly ppid: number;
  /** utime + stime, ticks. */
  readonly own: number;
  /** cutime + cstime (reaped children), ticks. */
  readonly children: number;
}

/** `/proc/<pid>/stat`, or undefined when the process is gone or unreadable. */
function procStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces: fields start after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): field n is fields[n - 3].
  const at = (n: number) => Number(fields[n - 3]);
  return { ppid: at(4), own: at(14) + at(15), children: at(16) + at(17) };
}

/**
 * The server's CPU time so far, ms, for the postmaster `postmasterPid`; NaN when it is not a process
 * of this host (or `/proc` is absent). A child reaped while the processes are read would be counted
 * neither alive nor in the postmaster's cutime: the reading is taken again (at most 5 times) until
 * the postmaster's reaped-children time is the same before and after the scan.
 */
export function serverCpuMs(postmasterPid: number): number {
  let ticks = Number.NaN;
  for (let tryNo = 0; tryNo < 5; tryNo++) {
    const before = procStat(postmasterPid);
    if (before === undefined) return Number.NaN;
    let entries: string[];
    try {
      entries = readdirSync('/proc');
    } catch {
      return Number.NaN;
    }
    let live = 0;
    for (const entry of entries) {
      const pid = Number(entry);
      if (!Number.isInteger(pid) || pid === postmasterPid) continue;
      const stat = procStat(pid);
      if (stat?.ppid === postmasterPid) live += stat.own;
    }
    const after = procStat(postmasterPid);
    if (after === undefined) return Number.NaN;
    ticks = after.own + after.children + live;
    if (after.children === before.children) break;
  }
  return (ticks * 1000) / clockTicks();
}

/**
 * The postmaster of the server a session runs on: the parent of its backend `backendPid`
 * (`pg_backend_pid()`) when that is a process of this host whose command is PostgreSQL's; else undefined.
 */
export function postmasterOf(backendPid: number): number | undefined {
  const backend = procStat(backendPid);
  if (backend === undefined) return undefined;
  try {
    const command = readFileSync(`/proc/${backend.ppid}/cmdline`, 'utf8');
    return /(^|\/)postgres\0/.test(command) ? backend.ppid : undefined;
  } catch {
    return undefined;
  }
}
