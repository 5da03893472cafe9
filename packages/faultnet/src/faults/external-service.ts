/**
 * A fake external service: a real HTTP server on 127.0.0.1 that applies a call at most once per
 * idempotency key and counts what it applied. Its dedup table lives in memory (like the seed's fake
 * service): it shows how keys are chosen, not how a real service makes dedup durable.
 *
 * Protocol: `POST /apply` with header `Idempotency-Key: <key>` → `200 {"applied":true|false}`
 * (`false` for a repeated key); no key → `400`. `GET /stats` → {@link ExternalStats}.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export const IDEMPOTENCY_HEADER = 'idempotency-key';

export interface ExternalStats {
  /** Calls received with a key. */
  readonly calls: number;
  /** Calls applied (first call of each key). */
  readonly applied: number;
  /** Distinct keys, in the order first seen. */
  readonly keysSeen: readonly string[];
}

export class ExternalService {
  private readonly keys = new Set<string>();
  private callCount = 0;

  private constructor(
    private readonly server: Server,
    /** Base URL, e.g. `http://127.0.0.1:41234`. */
    readonly url: string,
  ) {}

  /** Starts the service on 127.0.0.1 on a free port. */
  static async start(): Promise<ExternalService> {
    let service: ExternalService | undefined;
    const server = createServer((req, res) => service?.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (typeof address !== 'object' || !address) throw new Error('external service has no address');
    service = new ExternalService(server, `http://127.0.0.1:${address.port}`);
    return service;
  }

  /** The URL to POST calls to. */
  get applyUrl(): string {
    return `${this.url}/apply`;
  }

  stats(): ExternalStats {
    return { calls: this.callCount, applied: this.keys.size, keysSeen: [...this.keys] };
  }

  /** Stops listening and closes open connections. Idempotent. */
  async close(): Promise<void> {
    if (!this.server.listening) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    req.resume();
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'GET' && req.url === '/stats') {
      send(200, this.stats());
      return;
    }
    if (req.method !== 'POST' || req.url !== '/apply') {
      send(404, { error: 'not found' });
      return;
    }
    const key = req.headers[IDEMPOTENCY_HEADER];
    if (typeof key !== 'string' || key === '') {
      send(400, { error: `missing ${IDEMPOTENCY_HEADER} header` });
      return;
    }
    this.callCount++;
    const applied = !this.keys.has(key);
    this.keys.add(key);
    send(200, { applied });
  }
}

/**
 * Calls the service once with `key`.
 * @returns whether this call was the one applied
 * @throws Error on a non-200 answer or a network error
 */
export async function callExternal(applyUrl: string, key: string, timeoutMs = 5_000): Promise<boolean> {
  const response = await fetch(applyUrl, {
    method: 'POST',
    headers: { [IDEMPOTENCY_HEADER]: key },
    signal: AbortSignal.timeout(timeoutMs),
  });
  const body = (await response.json()) as { applied?: boolean; error?: string };
  if (response.status !== 200) throw new Error(`external service answered ${response.status}: ${body.error ?? ''}`);
  return body.applied === true;
}
