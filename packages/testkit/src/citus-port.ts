/**
 * The base port of a throwaway 3-node Citus cluster (`citus-cluster.sh start DIR BASEPORT`: the
 * coordinator on it, the workers on the next two), shared by the store's Citus suite and
 * `pnpm bench --citus`.
 */
import { createServer } from 'node:net';

/** Resolves true when `port` can be bound on 127.0.0.1 right now. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * `CITUS_BASEPORT` when set, else a random port in 20000..29996 whose two successors are free on
 * loopback too (5 tries).
 * @throws Error when no three consecutive free ports were found
 */
export async function citusBasePort(): Promise<number> {
  const given = process.env.CITUS_BASEPORT;
  if (given !== undefined && given !== '') return Number(given);
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const port = 20_000 + Math.floor(Math.random() * 9_997);
    if ((await portFree(port)) && (await portFree(port + 1)) && (await portFree(port + 2))) return port;
  }
  throw new Error('no three consecutive free loopback ports found in 5 tries: set CITUS_BASEPORT');
}
