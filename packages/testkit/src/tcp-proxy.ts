/**
 * A TCP proxy on 127.0.0.1 in front of a server (PostgreSQL), able to inject network faults per
 * connection or for all connections:
 *
 * - `pass`: bytes flow both ways.
 * - `delay`: every chunk is held `delayMs` before it is forwarded (order kept).
 * - `drop`: the connection is reset (RST to the client, upstream closed); new connections are reset
 *   on accept.
 * - `blackhole`: the connection stays open but bytes are read and discarded both ways (a half-open
 *   peer); new connections are accepted and never reach the server.
 *
 * Give each worker process its own proxy to fault "one process's connections".
 *
 * A steady added latency (`latencyMs`, each way, for a simulated network between client and server)
 * holds every chunk that long on top of any fault, order kept. Node's timers fire on whole
 * milliseconds, so the last part of a hold below 1 ms is slept with `Atomics.wait` on the proxy's
 * thread (it blocks the thread's event loop for that long, so run a latency proxy where nothing else
 * is timed); a loaded machine still stretches holds, and the proxy reports the mean hold it really
 * applied ({@link TcpProxy.meanHoldMs}). The proxy also counts request/response turns
 * ({@link TcpProxy.turns}): a turn begins when client bytes arrive after server bytes (or first).
 */
import { createServer, Socket, type Server } from 'node:net';

export type ProxyMode = 'pass' | 'delay' | 'drop' | 'blackhole';

export interface ProxyFault {
  readonly mode: ProxyMode;
  /** For `delay`: ms each chunk is held (default 100). */
  readonly delayMs?: number;
}

export interface ProxyConnectionInfo {
  readonly id: number;
  readonly mode: ProxyMode;
  /** Bytes forwarded client → server and server → client. */
  readonly bytesUp: number;
  readonly bytesDown: number;
  readonly open: boolean;
}

export interface TcpProxyOptions {
  readonly targetHost: string;
  readonly targetPort: number;
  /** Listening port on 127.0.0.1 (default 0: chosen by the OS). */
  readonly port?: number;
  /** Listening address (default 127.0.0.1); e.g. the bridge address of `NetnsHosts`, never a public one. */
  readonly listenHost?: string;
  /**
   * Added one-way latency, ms, applied to every chunk in both directions (default 0; at most
   * {@link MAX_LATENCY_MS}; fractions allowed, see the module note on timer resolution).
   */
  readonly latencyMs?: number;
}

/** Largest `latencyMs` a proxy accepts (a simulated network, not a fault). */
export const MAX_LATENCY_MS = 1_000;

/** Totals of the holds applied by a proxy's pipes: chunks held and the ms they were held. */
interface HoldStats {
  chunks: number;
  heldMs: number;
}

/** Never notified: `Atomics.wait` on it is a precise sleep of less than a millisecond. */
const SLEEPER = new Int32Array(new SharedArrayBuffer(4));

/** A one-way pump that forwards chunks after the connection's current delay, in order. */
class DelayedPipe {
  private queue: { chunk: Buffer; releaseAt: number; arrivedAt: number }[] = [];
  private timer: NodeJS.Timeout | undefined;
  bytes = 0;

  constructor(
    private readonly to: Socket,
    private readonly fault: () => ProxyFault,
    private readonly latencyMs = 0,
    private readonly holds: HoldStats = { chunks: 0, heldMs: 0 },
  ) {}

  push(chunk: Buffer): void {
    const fault = this.fault();
    if (fault.mode === 'blackhole' || fault.mode === 'drop') return;
    const delayMs = this.latencyMs + (fault.mode === 'delay' ? Math.max(0, fault.delayMs ?? 100) : 0);
    const last = this.queue.at(-1)?.releaseAt ?? 0;
    const now = performance.now();
    this.queue.push({ chunk, releaseAt: Math.max(now + delayMs, last), arrivedAt: now });
    this.pump();
  }

  clear(): void {
    this.queue = [];
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private pump(): void {
    if (this.timer) return;
    for (;;) {
      const now = performance.now();
      while (this.queue.length > 0 && this.queue[0]!.releaseAt <= now) {
        const { chunk, arrivedAt } = this.queue.shift()!;
        if (this.fault().mode === 'blackhole') continue;
        if (!this.to.destroyed) {
          this.to.write(chunk);
          this.bytes += chunk.length;
          this.holds.chunks++;
          this.holds.heldMs += now - arrivedAt;
        }
      }
      const head = this.queue[0];
      if (!head) return;
      const waitMs = head.releaseAt - now;
      // A timer cannot wait less than 1 ms: a sub-millisecond latency hold sleeps (no spin) instead.
      if (this.latencyMs > 0 && waitMs < 1) {
        Atomics.wait(SLEEPER, 0, 0, waitMs);
        continue;
      }
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.pump();
      }, waitMs);
      return;
    }
  }
}

class ProxyConnection {
  fault: ProxyFault;
  open = true;
  private forgotten = false;
  private readonly onClose: () => void;
  private readonly upstream: Socket | undefined;
  private readonly up: DelayedPipe | undefined;
  private readonly down: DelayedPipe | undefined;

  constructor(
    readonly id: number,
    private readonly client: Socket,
    fault: ProxyFault,
    target: TcpProxyOptions,
    onClose: () => void,
    counters: { turns: number; holds: HoldStats } = { turns: 0, holds: { chunks: 0, heldMs: 0 } },
  ) {
    this.fault = fault;
    client.setNoDelay(true);
    client.on('error', () => this.close());
    // Forgotten by the proxy only once both sides are closed: a blackholed connection whose client
    // gave up keeps its upstream (the server never learns), and `TcpProxy.close` must still end it —
    // else its backend, perhaps inside a transaction, holds its locks until the server stops.
    this.onClose = onClose;
    client.on('close', () => {
      this.open = false;
      // A client's FIN reaches the server unless the connection is blackholed.
      if (this.fault.mode !== 'blackhole') this.upstream?.destroy();
      this.forgetWhenClosed();
    });
    if (fault.mode === 'drop') {
      client.resetAndDestroy();
      this.open = false;
      return;
    }
    if (fault.mode === 'blackhole') {
      // Accept and swallow: read everything, answer nothing, never reach the server (this
      // connection stays swallowed even if the fault is lifted later).
      client.on('data', () => {});
      return;
    }
    const upstream = new Socket();
    this.upstream = upstream;
    upstream.setNoDelay(true);
    this.up = new DelayedPipe(upstream, () => this.fault, target.latencyMs, counters.holds);
    this.down = new DelayedPipe(client, () => this.fault, target.latencyMs, counters.holds);
    upstream.on('error', () => this.close());
    upstream.on('close', () => {
      this.close();
      this.forgetWhenClosed();
    });
    // A turn: client bytes after server bytes (or the first client bytes).
    let serverSpokeLast = true;
    upstream.on('data', (chunk: Buffer) => {
      serverSpokeLast = true;
      this.down?.push(chunk);
    });
    client.on('data', (chunk: Buffer) => {
      if (serverSpokeLast) counters.turns++;
      serverSpokeLast = false;
      this.up?.push(chunk);
    });
    upstream.connect(target.targetPort, target.targetHost);
  }

  setFault(fault: ProxyFault): void {
    this.fault = fault;
    if (fault.mode === 'drop') this.reset();
    else if (fault.mode === 'blackhole') {
      this.up?.clear();
      this.down?.clear();
    }
  }

  info(): ProxyConnectionInfo {
    return { id: this.id, mode: this.fault.mode, bytesUp: this.up?.bytes ?? 0, bytesDown: this.down?.bytes ?? 0, open: this.open };
  }

  /** Sends RST to the client and closes the upstream side. */
  reset(): void {
    this.up?.clear();
    this.down?.clear();
    if (!this.client.destroyed) this.client.resetAndDestroy();
    this.upstream?.destroy();
    this.open = false;
  }

  private forgetWhenClosed(): void {
    if (this.forgotten || !this.client.destroyed || (this.upstream !== undefined && !this.upstream.destroyed)) return;
    this.forgotten = true;
    this.onClose();
  }

  close(): void {
    this.up?.clear();
    this.down?.clear();
    this.client.destroy();
    this.upstream?.destroy();
    this.open = false;
  }
}

export class TcpProxy {
  private readonly connections = new Map<number, ProxyConnection>();
  private nextId = 1;
  private defaultFault: ProxyFault = { mode: 'pass' };
  private acceptedCount = 0;
  private readonly counters = { turns: 0, holds: { chunks: 0, heldMs: 0 } };
  /** Where new connections go (see {@link retarget}); open ones stay with the server they reached. */
  private target: TcpProxyOptions;

  private constructor(
    private readonly server: Server,
    private readonly options: TcpProxyOptions,
    /** The port the proxy listens on (127.0.0.1). */
    readonly port: number,
  ) {
    this.target = options;
  }

  /**
   * Sends connections accepted from now on to another server (a DNS name or a cloud endpoint
   * that moved, e.g. after a failover); connections already open stay where they are.
   */
  retarget(targetHost: string, targetPort: number): void {
    this.target = { ...this.options, targetHost, targetPort };
  }

  /** Host and port new connections go to. */
  get targetAddress(): { readonly host: string; readonly port: number } {
    return { host: this.target.targetHost, port: this.target.targetPort };
  }

  /**
   * Starts a proxy listening on 127.0.0.1.
   * @throws Error when the port cannot be bound
   */
  static async start(options: TcpProxyOptions): Promise<TcpProxy> {
    const latency = options.latencyMs ?? 0;
    if (!Number.isFinite(latency) || latency < 0 || latency > MAX_LATENCY_MS) throw new RangeError(`latencyMs must be within 0..${MAX_LATENCY_MS}, got ${latency}`);
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, options.listenHost ?? '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (typeof address !== 'object' || !address) throw new Error('proxy has no address');
    const proxy = new TcpProxy(server, options, address.port);
    server.on('connection', (socket) => proxy.accept(socket));
    return proxy;
  }

  /**
   * Starts a proxy in front of the server of a `postgres://` URL.
   * @param options `listenHost` (see {@link TcpProxyOptions.listenHost}) and `latencyMs` (see {@link TcpProxyOptions.latencyMs})
   */
  static async forUrl(url: string, options: { readonly listenHost?: string; readonly latencyMs?: number } = {}): Promise<TcpProxy> {
    const u = new URL(url);
    return await TcpProxy.start({
      targetHost: u.hostname,
      targetPort: Number(u.port || 5432),
      ...(options.listenHost === undefined ? {} : { listenHost: options.listenHost }),
      ...(options.latencyMs === undefined ? {} : { latencyMs: options.latencyMs }),
    });
  }

  /** Request/response turns on all connections since start (a turn: client bytes after server bytes, or first). */
  get turns(): number {
    return this.counters.turns;
  }

  /** Mean time a forwarded chunk was held in the proxy, ms (NaN before the first). */
  get meanHoldMs(): number {
    const { chunks, heldMs } = this.counters.holds;
    return chunks > 0 ? heldMs / chunks : Number.NaN;
  }

  /** `url` with host and port replaced by the proxy's. */
  rewrite(url: string): string {
    const u = new URL(url);
    u.hostname = this.options.listenHost ?? '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  /** Sets the fault for every open connection and for connections accepted later. */
  setFault(fault: ProxyFault): void {
    this.defaultFault = fault;
    for (const connection of this.connections.values()) connection.setFault(fault);
  }

  /**
   * Sets the fault of one open connection (ids from {@link list}).
   * @throws Error when no such connection is open
   */
  setConnectionFault(id: number, fault: ProxyFault): void {
    const connection = this.connections.get(id);
    if (!connection) throw new Error(`no open proxy connection ${id}`);
    connection.setFault(fault);
  }

  /** Open connections. */
  list(): ProxyConnectionInfo[] {
    return [...this.connections.values()].map((c) => c.info());
  }

  /** Connections accepted since start. */
  get accepted(): number {
    return this.acceptedCount;
  }

  /** Closes every connection and stops listening. Idempotent. */
  async close(): Promise<void> {
    for (const connection of this.connections.values()) connection.close();
    this.connections.clear();
    if (!this.server.listening) return;
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(socket: Socket): void {
    this.acceptedCount++;
    const id = this.nextId++;
    const connection = new ProxyConnection(id, socket, this.defaultFault, this.target, () => this.connections.delete(id), this.counters);
    if (connection.open) this.connections.set(id, connection);
  }
}
