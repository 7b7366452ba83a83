// `npm run bench`: GET /v1/whoami through the whole stack (bearer auth with the key cache, request and response
// validation, the handler, request logging), against a bare Express route measured in the same run, each server in
// its own process, on loopback, with autocannon, in alternating rounds. Prints req/s, p50/p99 latency and the median
// ratio (target >= 0.5).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { root } from '../../server/core/paths.ts';

const DURATION = Number(process.env.BENCH_SECONDS ?? 6);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

/** Starts a server process and resolves with its stdout once `ready` matches it (later output is drained, unread). */
function start(script: string, env: Record<string, string>, ready: RegExp): Promise<{ child: ChildProcess; banner: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let banner = '';
    const onData = (chunk: Buffer) => {
      banner += chunk;
      if (ready.test(banner)) {
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve({ child, banner });
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}: ${banner}`)));
  });
}

async function measure(name: string, url: string, headers: Record<string, string>) {
  const r = await autocannon({ url, headers, connections: CONNECTIONS, duration: DURATION });
  if (r.non2xx || r.errors) throw new Error(`${name}: ${r.non2xx} non-2xx responses, ${r.errors} errors`);
  return { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 };
}

const dir = mkdtempSync(join(tmpdir(), 'platform-bench-'));
const children: ChildProcess[] = [];
try {
  const barePort = await freePort();
  const bare = await start('test/bench/bare.ts', { PORT: String(barePort) }, /listening on .*\n/);
  children.push(bare.child);
  const fullPort = await freePort();
  const full = await start('server/main.ts', { PORT: String(fullPort), DATABASE_URL: process.env.BENCH_DATABASE_URL ?? `file:${join(dir, 'bench.db')}`, RUNNER_ENABLED: 'false' }, /(API key.*|existing database.*)\n/);
  children.push(full.child);
  const key = full.banner.match(/tpk_[\w-]+/)?.[0];
  if (!key) throw new Error('the platform printed no development key (use an empty BENCH_DATABASE_URL)');

  const bareUrl = `http://127.0.0.1:${barePort}/v1/whoami`;
  const fullUrl = `http://127.0.0.1:${fullPort}/v1/whoami`;
  const auth = { Authorization: `Bearer ${key}` };
  // Warm-up (JIT, the validator's spec compilation, the key cache), then rounds that alternate the two servers, so
  // that whatever else the machine does weighs on both alike; the ratio reported is the median round's.
  await autocannon({ url: bareUrl, connections: CONNECTIONS, duration: 2 });
  await autocannon({ url: fullUrl, headers: auth, connections: CONNECTIONS, duration: 2 });
  const ratios: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const baseline = await measure('bare Express 5 route', bareUrl, {});
    const stack = await measure('whole stack', fullUrl, auth);
    for (const r of [baseline, stack]) console.log(`round ${round}  ${r.name.padEnd(22)} ${r.rps.toFixed(0).padStart(6)} req/s   p50 ${r.p50} ms   p99 ${r.p99} ms`);
    ratios.push(stack.rps / baseline.rps);
  }
  const ratio = ratios.sort((a, b) => a - b)[Math.floor(ratios.length / 2)];
  console.log(`ratio whole stack / bare: ${ratio.toFixed(2)} median of ${ratios.map((r) => r.toFixed(2)).join(', ')} (target >= 0.50; ${CONNECTIONS} connections, ${DURATION} s per measurement)`);
  process.exitCode = ratio >= 0.5 ? 0 : 1;
} finally {
  for (const c of children) c.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
