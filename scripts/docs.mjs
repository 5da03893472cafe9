// @ts-check
/**
 * `pnpm run docs`: builds the docs site — the TypeDoc API reference of the public packages, with the
 * README as its front page and the guides (docs/guides/*.md), the contract, the glossary and the
 * architecture as documents (typedoc.json) — into docs/api/, then serves that folder on 127.0.0.1
 * at a free port (printed) until Ctrl-C.
 *
 *   pnpm run docs             build, then serve (also `pnpm docs:serve`; `pnpm docs` alone is
 *                             pnpm's own command, which opens a package's home page)
 *   pnpm run docs --no-serve  build only (same as `pnpm docs:build`)
 *   pnpm run docs --no-build  serve what was built last
 *   pnpm run docs --port 8080 serve on this port instead of a free one
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, join, normalize, resolve, sep } from 'node:path';

const repo = resolve(import.meta.dirname, '..');
const site = join(repo, JSON.parse(readFileSync(join(repo, 'typedoc.json'), 'utf8')).out);

/** @param {string} [problem] */
function usage(problem) {
  const text = 'usage: pnpm run docs [--no-serve | --no-build] [--port <n>]';
  if (problem === undefined) {
    console.log(text);
    process.exit(0);
  }
  console.error(`docs: ${problem}\n${text}`);
  process.exit(2);
}

const TYPES = /** @type {Record<string, string>} */ ({
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
  '.md': 'text/plain; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.patch': 'text/plain; charset=utf-8',
});

/** A static file server on loopback for `root`: GET and HEAD only, never a path outside it. @param {string} root @param {number} port */
function serve(root, port) {
  if (!existsSync(join(root, 'index.html'))) {
    console.error(`docs: ${root} has no index.html; build it first (pnpm docs:build)`);
    process.exit(1);
  }
  const server = createServer((req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405, { allow: 'GET, HEAD' }).end();
    let path;
    try {
      path = decodeURIComponent(new URL(req.url ?? '/', 'http://localhost').pathname);
    } catch {
      return void res.writeHead(400).end();
    }
    let file = normalize(join(root, path));
    if (file !== root && !file.startsWith(root + sep)) return void res.writeHead(403).end();
    if (existsSync(file) && statSync(file).isDirectory()) file = join(file, 'index.html');
    if (!existsSync(file) || !statSync(file).isFile()) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    const body = readFileSync(file);
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'content-length': body.length, 'cache-control': 'no-cache' });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  server.on('error', (error) => {
    console.error(`docs: cannot listen on 127.0.0.1:${port}: ${error.message}`);
    process.exit(1);
  });
  server.listen(port, '127.0.0.1', () => {
    const address = server.address();
    const at = typeof address === 'object' && address !== null ? address.port : port;
    console.log(`docs: serving ${root} at http://127.0.0.1:${at}/ (Ctrl-C stops)`);
  });
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

const args = process.argv.slice(2).filter((a) => a !== '--');
const known = new Set(['--no-serve', '--no-build', '--port', '--help']);
for (const [i, a] of args.entries()) {
  if (!known.has(a) && args[i - 1] !== '--port') usage(`unknown argument ${a}`);
}
if (args.includes('--help')) usage();
const portAt = args.indexOf('--port');
const port = portAt === -1 ? 0 : Number(args[portAt + 1]);
if (!Number.isInteger(port) || port < 0 || port > 65_535) usage('--port takes a port number 0..65535');

if (!args.includes('--no-build')) {
  // TypeDoc from this workspace (typedoc.json: treatWarningsAsErrors, so a broken link fails here).
  const typedoc = join(repo, 'node_modules', 'typedoc', 'bin', 'typedoc');
  const run = spawnSync(process.execPath, [typedoc], { cwd: repo, stdio: 'inherit' });
  if (run.status !== 0) process.exit(run.status ?? 1);
}
if (!args.includes('--no-serve')) serve(site, port);
