/**
 * A pass-through TCP proxy for one host that counts the statements its clients send: PostgreSQL
 * frontend messages `Q` (simple query) and `E` (Execute of the extended protocol), after the
 * untyped startup message (and any SSLRequest / GSSENCRequest before it) — PostgreSQL 17 §53.7,
 * "Message Formats". It listens on the hosts' bridge address only. Open client connections are
 * counted too.
 */
import { createServer, type Server, type Socket, connect } from 'node:net';

/** SSLRequest and GSSENCRequest codes: another startup message follows. */
const NEGOTIATION_CODES = new Set([80_877_103, 80_877_104]);

/** Counts `Q` and `E` messages in one client's byte stream, across chunk boundaries. */
export class FrontendCounter {
  statements = 0;
  private startup = true;
  private header = Buffer.alloc(0);
  private skip = 0;

  feed(chunk: Buffer): void {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, chunk.length - offset);
        this.skip -= n;
        offset += n;
        continue;
      }
      const headerLength = this.startup ? 8 : 5;
      const take = Math.min(headerLength - this.header.length, chunk.length - offset);
      this.header = Buffer.concat([this.header, chunk.subarray(offset, offset + take)]);
      offset += take;
      if (this.header.length < headerLength) return;
      if (this.startup) {
        const length = this.header.readInt32BE(0);
        if (!NEGOTIATION_CODES.has(this.header.readInt32BE(4))) this.startup = false;
        this.skip = Math.max(0, length - 8);
      } else {
        const type = String.fromCharCode(this.header[0] ?? 0);
        if (type === 'Q' || type === 'E') this.statements += 1;
        this.skip = Math.max(0, this.header.readInt32BE(1) - 4);
      }
      this.header = Buffer.alloc(0);
    }
  }
}

export class CountingProxy {
  private readonly counters = new Set<FrontendCounter>();
  private closedStatements = 0;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    /** The address and port clients connect to. */
    readonly host: string,
    readonly port: number,
  ) {}

  /** Starts a proxy on `listenHost` (port chosen by the OS) in front of `targetHost:targetPort`. */
  static async start(listenHost: string, targetHost: string, targetPort: number): Promise<CountingProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, listenHost, () => resolve());
    });
    const address = server.address();
    if (typeof address !== 'object' || address === null) throw new Error('counting proxy has no address');
    const proxy = new CountingProxy(server, listenHost, address.port);
    server.on('connection', (client) => proxy.accept(client, targetHost, targetPort));
    return proxy;
  }

  /** Statements sent through this proxy since it started. */
  get statements(): number {
    let n = this.closedStatements;
    for (const c of this.counters) n += c.statements;
    return n;
  }

  /** Client connections open now. */
  get open(): number {
    return this.counters.size;
  }

  /** `url` pointing at this proxy. */
  rewrite(url: string): string {
    const u = new URL(url);
    u.hostname = this.host;
    u.port = String(this.port);
    return u.toString();
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, targetHost: string, targetPort: number): void {
    const counter = new FrontendCounter();
    this.counters.add(counter);
    const upstream = connect(targetPort, targetHost);
    this.sockets.add(client).add(upstream);
    let done = false;
    const end = () => {
      if (done) return;
      done = true;
      this.closedStatements += counter.statements;
      this.counters.delete(counter);
      this.sockets.delete(client);
      this.sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk: Buffer) => {
      counter.feed(chunk);
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    for (const s of [client, upstream]) {
      s.on('error', end);
      s.on('close', end);
    }
  }
}
