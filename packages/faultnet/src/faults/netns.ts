/**
 * Worker "hosts" as Linux network namespaces (ip-netns(8), veth(4)): one bridge in the root
 * namespace with a private address (10.213.k.1/24, k from the process id), and per host a namespace
 * holding one end of a veth pair (10.213.k.(10+i)/24), the other end on the bridge. A process runs
 * "on" a host through `ip netns exec <ns> …` ({@link NetnsHosts.command}); the database side listens
 * on the bridge address only (e.g. a `TcpProxy` with `listenHost: hosts.gateway`), never on a
 * public interface. Taking a host's root-side veth end down ({@link NetnsHosts.down}) cuts its link
 * silently: no FIN, no RST, packets simply stop, as a pulled cable or a partition.
 *
 * Needs root (CAP_NET_ADMIN) and `ip` from iproute2; {@link netnsUnavailable} says why not. Every
 * name carries this process's id, so {@link NetnsHosts.destroy} (also run on process exit) removes
 * exactly what it made, and a later run removes what a killed run left behind.
 */
import { execFileSync } from 'node:child_process';

/** Bound of one `ip` call, ms. */
const IP_TIMEOUT_MS = 5_000;
const PREFIX = 'pp';

function ip(args: readonly string[]): string {
  return execFileSync('ip', args, { timeout: IP_TIMEOUT_MS, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
}

function quietly(args: readonly string[]): void {
  try {
    ip(args);
  } catch {
    // already gone
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Why this machine cannot make network-namespace hosts (not root, no `ip`, netns refused), or
 * `undefined` when it can: it adds and deletes a probe namespace.
 */
export function netnsUnavailable(): string | undefined {
  if (process.platform !== 'linux') return `network namespaces need Linux (this is ${process.platform})`;
  if (typeof process.getuid === 'function' && process.getuid() !== 0) return 'network namespaces need root (CAP_NET_ADMIN); run as root';
  const probe = `${PREFIX}${process.pid}probe`;
  try {
    ip(['netns', 'add', probe]);
  } catch (error) {
    return `ip netns add refused: ${String((error as { stderr?: unknown }).stderr ?? (error as Error).message).trim().slice(0, 200)}`;
  }
  quietly(['netns', 'del', probe]);
  return undefined;
}

/** Removes namespaces and bridges a killed earlier run left (their process id no longer alive). */
export function removeStaleHosts(): number {
  let removed = 0;
  const own = new RegExp(`^${PREFIX}(\\d+)(h\\d+|probe|br)$`);
  let namespaces: string[] = [];
  try {
    namespaces = ip(['netns', 'list']).split('\n').map((line) => line.split(' ')[0] ?? '');
  } catch {
    return 0;
  }
  for (const name of namespaces) {
    const pid = Number(own.exec(name)?.[1]);
    if (Number.isInteger(pid) && pid > 0 && !alive(pid)) {
      quietly(['netns', 'del', name]);
      removed += 1;
    }
  }
  let links: string[] = [];
  try {
    links = ip(['-o', 'link', 'show', 'type', 'bridge']).split('\n').map((line) => (line.split(': ')[1] ?? '').split('@')[0] ?? '');
  } catch {
    return removed;
  }
  for (const name of links) {
    const pid = Number(own.exec(name)?.[1]);
    if (Number.isInteger(pid) && pid > 0 && !alive(pid)) {
      quietly(['link', 'del', name]);
      removed += 1;
    }
  }
  return removed;
}

export interface NetHost {
  /** 1-based. */
  readonly index: number;
  /** The namespace. */
  readonly ns: string;
  /** The host's address on the bridge. */
  readonly address: string;
  /** The veth end on the bridge (root namespace): down cuts the host off. */
  readonly link: string;
}

const live = new Set<NetnsHosts>();
let exitHook = false;

/** Hosts made by {@link NetnsHosts.create}; {@link destroy} them (also done at process exit). */
export class NetnsHosts {
  private destroyed = false;

  private constructor(
    /** The bridge in the root namespace. */
    readonly bridge: string,
    /** The bridge's address: what the hosts reach the database on. */
    readonly gateway: string,
    readonly hosts: readonly NetHost[],
  ) {}

  /**
   * Makes `count` hosts (1..64) on one bridge.
   * @throws Error naming the `ip` call that failed (everything made so far is removed)
   */
  static create(count: number): NetnsHosts {
    if (!Number.isInteger(count) || count < 1 || count > 64) throw new RangeError(`count must be 1..64, got ${count}`);
    removeStaleHosts();
    const tag = `${PREFIX}${process.pid}`;
    const subnet = `10.213.${(process.pid % 250) + 1}`;
    const bridge = `${tag}br`;
    const hosts: NetHost[] = Array.from({ length: count }, (_, i) => ({ index: i + 1, ns: `${tag}h${i + 1}`, address: `${subnet}.${10 + i}`, link: `${tag}r${i + 1}` }));
    const made = new NetnsHosts(bridge, `${subnet}.1`, hosts);
    live.add(made);
    if (!exitHook) {
      exitHook = true;
      process.once('exit', () => {
        for (const h of live) h.destroy();
      });
    }
    try {
      ip(['link', 'add', bridge, 'type', 'bridge']);
      ip(['addr', 'add', `${made.gateway}/24`, 'dev', bridge]);
      ip(['link', 'set', bridge, 'up']);
      for (const h of hosts) {
        const inner = `${tag}i${h.index}`;
        ip(['netns', 'add', h.ns]);
        ip(['link', 'add', h.link, 'type', 'veth', 'peer', 'name', inner]);
        ip(['link', 'set', inner, 'netns', h.ns]);
        ip(['link', 'set', h.link, 'master', bridge]);
        ip(['link', 'set', h.link, 'up']);
        ip(['-n', h.ns, 'addr', 'add', `${h.address}/24`, 'dev', inner]);
        ip(['-n', h.ns, 'link', 'set', inner, 'up']);
        ip(['-n', h.ns, 'link', 'set', 'lo', 'up']);
      }
    } catch (error) {
      made.destroy();
      throw new Error(`making ${count} network-namespace hosts failed: ${String((error as { stderr?: unknown }).stderr ?? (error as Error).message).trim()}`, { cause: error });
    }
    return made;
  }

  /** The command prefix that runs a program on `host`: `['ip', 'netns', 'exec', ns]`. */
  command(host: NetHost): readonly string[] {
    return ['ip', 'netns', 'exec', host.ns];
  }

  /** Cuts `host` off (its bridge-side veth end down): no FIN, no RST, packets stop. */
  down(host: NetHost): void {
    ip(['link', 'set', host.link, 'down']);
  }

  /** Brings `host`'s link back. */
  up(host: NetHost): void {
    ip(['link', 'set', host.link, 'up']);
  }

  /** Removes every namespace (their veth pairs go with them) and the bridge. Idempotent, bounded (5 s per `ip` call). */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    live.delete(this);
    for (const h of this.hosts) {
      quietly(['link', 'del', h.link]);
      quietly(['netns', 'del', h.ns]);
    }
    quietly(['link', 'del', this.bridge]);
  }
}
