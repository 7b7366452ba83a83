// `npm run bench [-- <scenario name filter>]`: each scenario of test/bench/scenarios.ts through the whole stack (the
// server as `npm start` runs it: auth with the key cache, request and response validation, the handler, the request
// log line), against a bare Express route answering the same body, each server in its own process, on loopback,
// driven by autocannon in rounds that alternate the two servers, so that whatever else this 2-core machine does
// weighs on both alike. Reports req/s, p50/p99 and the servers' CPU per request (from /proc: steadier than req/s on
// a shared machine), and the median round's ratio against the scenario's target.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { root } from '../../server/core/paths.ts';
import { batchBench } from './batches.ts';
import { benchImage } from './image.ts';
import { queueBench } from './queue.ts';
import { resetBench } from './reset.ts';
import { benchRl } from './rl.ts';
import { runnerBench } from './runner.ts';
import { BENCH_CONTROL_KEY, type Scenario, scenarios } from './scenarios.ts';
import { benchSpeech } from './speech.ts';
import { startBench } from './start.ts';
import { benchVideo } from './video.ts';

// `--smoke` (CI): every scenario through the whole stack once, briefly; fails only when a request fails, not on timings
// (a shared machine's timings gate nothing).
const SMOKE = process.argv.includes('--smoke');
const DURATION = SMOKE ? 1 : Number(process.env.BENCH_SECONDS ?? 6);
const ROUNDS = SMOKE ? 1 : Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const filter = process.argv.slice(2).find((a) => !a.startsWith('--'));

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

/** Starts a process and resolves with its stdout once `ready` matches it (later output is drained, unread). */
function start(args: string[], env: Record<string, string>, ready: RegExp): Promise<{ child: ChildProcess; banner: string }> {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let banner = '';
    const onData = (chunk: Buffer) => {
      banner += chunk;
      if (!ready.test(banner)) return;
      child.stdout!.off('data', onData);
      child.stdout!.resume();
      resolve({ child, banner });
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}: ${banner}`)));
  });
}

/** CPU time (user + system) of a process so far, in microseconds. */
const cpuMicros = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
};

interface Sample {
  rps: number;
  mean: number;
  p50: number;
  p99: number;
  cpuPerRequest: number;
  requests: number;
  cpuMicros: number;
}

async function measure(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  pid: number,
  connections: number,
  duration = DURATION,
): Promise<Sample> {
  const before = cpuMicros(pid);
  const r = await autocannon({ url, method: method as 'GET', headers, body, connections, duration });
  if (r.non2xx || r.errors) throw new Error(`${url}: ${r.non2xx} non-2xx responses, ${r.errors} errors`);
  const cpu = cpuMicros(pid) - before;
  return {
    rps: r.requests.average,
    mean: r.latency.mean,
    p50: r.latency.p50,
    p99: r.latency.p99,
    cpuPerRequest: cpu / r.requests.total,
    requests: r.requests.total,
    cpuMicros: cpu,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const dir = mkdtempSync(join(tmpdir(), 'platform-bench-'));
const children: ChildProcess[] = [];
let failed = 0;
const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
/** A scenario's figures, as RESULTS.md records them. */
interface Result {
  name: string;
  ratio: number;
  cpuRatio: number;
  cpuPerRequest: number;
  bareCpuPerRequest: number;
  mean: number;
  p50: number;
  target: string;
  met: boolean;
}
const results = new Map<string, Result>();
try {
  // The whole stack, started as `npm start` starts it.
  const start_ = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts.start as string;
  const nodeArgs = start_.replace(/^exec node /, '').split(' ');
  // One server at a time (issue 31): the scenarios sharing an environment run on one server of their own, with the
  // bare server for their answers beside it, and both stop before the next group starts, so no idle server (its
  // runner's polls, its timers) shares the two cores with the one measured. The rate limits are off unless a
  // scenario turns them on: at their default base a throughput run is mostly 429s.
  const chosen = scenarios.filter((s) => !filter || s.name.includes(filter));
  const groups = new Map<string, Scenario[]>();
  for (const s of chosen) {
    const id = JSON.stringify({ RATE_LIMITS: 'off', ...s.env });
    groups.set(id, [...(groups.get(id) ?? []), s]);
  }
  let n = 0;
  for (const [id, group] of groups) {
    const env = JSON.parse(id) as Record<string, string>;
    const port = await freePort();
    const database = process.env.BENCH_DATABASE_URL && n === 0 ? process.env.BENCH_DATABASE_URL : `file:${join(dir, `bench-${n}.db`)}`;
    n++;
    const full = await start(
      nodeArgs,
      { PORT: String(port), DATABASE_URL: database, RUNNER_ENABLED: 'false', CONTROL_KEY: BENCH_CONTROL_KEY, ...env },
      /(API key.*|existing database.*)\n/,
    );
    children.push(full.child);
    const key = full.banner.match(/tpk_[\w-]+/)?.[0];
    if (!key) throw new Error('the platform printed no development key (use an empty BENCH_DATABASE_URL)');
    const server = {
      url: `http://127.0.0.1:${port}`,
      pid: full.child.pid!,
      auth: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      database,
    };
    for (const s of group) await s.setup?.(server);
    // The bare server answers exactly what the whole stack answers.
    const answers = [];
    for (const s of group) {
      const res = await fetch(`${server.url}${s.path}`, {
        method: s.method,
        headers: server.auth,
        body: s.body === undefined ? undefined : JSON.stringify(s.body),
      });
      if (!res.ok) throw new Error(`${s.name}: ${s.method} ${s.path} answered ${res.status} ${await res.text()}`);
      answers.push({ method: s.method, path: s.path.split('?')[0], body: await res.json() });
    }
    writeFileSync(join(dir, 'answers.json'), JSON.stringify(answers));
    const barePort = await freePort();
    const bare = await start(
      ['--import', 'tsx', 'test/bench/bare.ts'],
      { PORT: String(barePort), BARE_ANSWERS: join(dir, 'answers.json') },
      /listening on .*\n/,
    );
    children.push(bare.child);
    const bareUrl = `http://127.0.0.1:${barePort}`;

    for (const s of group) {
      const body = s.body === undefined ? undefined : JSON.stringify(s.body);
      const connections = s.connections ?? CONNECTIONS;
      // Warm-up (JIT, the validator's compilation, caches), then alternating rounds.
      if (!SMOKE) {
        await autocannon({ url: `${bareUrl}${s.path}`, method: s.method, headers: server.auth, body, connections, duration: 2 });
        await autocannon({ url: `${server.url}${s.path}`, method: s.method, headers: server.auth, body, connections, duration: 2 });
      }
      const ratios: number[] = [];
      const cpuRatios: number[] = [];
      const p50s: number[] = [];
      const cpus: number[] = [];
      const bareCpus: number[] = [];
      const means: number[] = [];
      for (let round = 1; round <= ROUNDS; round++) {
        const b = await measure(`${bareUrl}${s.path}`, s.method, server.auth, body, bare.child.pid!, connections);
        const w = await measure(`${server.url}${s.path}`, s.method, server.auth, body, server.pid, connections);
        console.log(
          `${s.name} round ${round} (${connections} connection${connections === 1 ? '' : 's'}): bare ${b.rps.toFixed(0)} req/s (p50 ${b.p50} ms, ${b.cpuPerRequest.toFixed(0)} µs CPU/req)  ` +
            `whole stack ${w.rps.toFixed(0)} req/s (p50 ${w.p50} ms, p99 ${w.p99} ms, ${w.cpuPerRequest.toFixed(0)} µs CPU/req)`,
        );
        ratios.push(w.rps / b.rps);
        cpuRatios.push(b.cpuPerRequest / w.cpuPerRequest);
        p50s.push(w.p50);
        cpus.push(w.cpuPerRequest);
        bareCpus.push(b.cpuPerRequest);
        means.push(w.mean);
      }
      const ratio = median(ratios);
      const p50 = median(p50s);
      const met = (s.target.ratio === undefined || ratio >= s.target.ratio) && (s.target.p50Ms === undefined || p50 < s.target.p50Ms);
      const target = s.target.ratio !== undefined ? `ratio >= ${s.target.ratio}` : `p50 < ${s.target.p50Ms} ms`;
      if (!met && !SMOKE) failed++;
      results.set(s.name, {
        name: s.name,
        ratio,
        cpuRatio: median(cpuRatios),
        cpuPerRequest: median(cpus),
        bareCpuPerRequest: median(bareCpus),
        mean: median(means),
        p50,
        target,
        met,
      });
      console.log(
        `RESULT ${s.name}: ratio ${ratio.toFixed(2)} (rounds ${ratios.map((r) => r.toFixed(2)).join(', ')}; CPU ratio ${median(cpuRatios).toFixed(2)}), p50 ${p50} ms` +
          `  target ${target}: ${met ? 'met' : 'MISSED'}`,
      );
    }
    // What a setting costs a request, on the same server. One 6 s measurement's CPU per request varies by ±15% on this
    // machine (GC, scheduling), more than the cost measured, so each round interleaves short slices without and with
    // it (ABBA, cancelling drift) and pools each side's CPU over its requests.
    const SLICES = SMOKE ? 2 : 6;
    for (const s of group) {
      if (!s.costOf) continue;
      const body = s.body === undefined ? undefined : JSON.stringify(s.body);
      const connections = s.connections ?? CONNECTIONS;
      const shares: number[] = [];
      for (let round = 1; round <= ROUNDS; round++) {
        const pooled = { without: { cpu: 0, requests: 0 }, within: { cpu: 0, requests: 0 } };
        for (let slice = 0; slice < SLICES; slice++) {
          for (const side of slice % 2 ? (['within', 'without'] as const) : (['without', 'within'] as const)) {
            await (side === 'within' ? s.costOf.redo : s.costOf.undo)(server);
            const m = await measure(`${server.url}${s.path}`, s.method, server.auth, body, server.pid, connections, Math.max(1, Math.round(DURATION / 3)));
            pooled[side].cpu += m.cpuMicros;
            pooled[side].requests += m.requests;
          }
        }
        const without = pooled.without.cpu / pooled.without.requests;
        const within = pooled.within.cpu / pooled.within.requests;
        shares.push(within / without - 1);
        console.log(`${s.name} round ${round}: ${without.toFixed(0)} µs CPU/req without ${s.costOf.what}, ${within.toFixed(0)} with`);
      }
      const share = median(shares);
      const met = share <= s.costOf.maxShare;
      if (!met && !SMOKE) failed++;
      console.log(
        `RESULT ${s.name}: ${s.costOf.what} cost ${(share * 100).toFixed(1)}% CPU per request (rounds ${shares.map((a) => `${(a * 100).toFixed(1)}%`).join(', ')})` +
          `  target <= ${s.costOf.maxShare * 100}%: ${met ? 'met' : 'MISSED'}`,
      );
    }
    await stop(bare.child);
    await stop(full.child);
  }
  // What a setting adds to the same request: CPU per request, and mean latency, against its baseline scenario.
  const added: string[] = [];
  for (const s of chosen) {
    const mine = results.get(s.name);
    const theirs = s.baseline === undefined ? undefined : results.get(s.baseline);
    if (!mine || !theirs) continue;
    const share = mine.cpuPerRequest / theirs.cpuPerRequest - 1;
    const met = s.maxAdded === undefined || share <= s.maxAdded;
    if (!met && !SMOKE) failed++;
    const line =
      `${s.name} vs ${s.baseline}: ${(mine.cpuPerRequest - theirs.cpuPerRequest).toFixed(0)} µs CPU/req (${theirs.cpuPerRequest.toFixed(0)} -> ${mine.cpuPerRequest.toFixed(0)}, ${(share * 100).toFixed(1)}%), ` +
      `mean latency ${(mine.mean - theirs.mean).toFixed(2)} ms (${theirs.mean.toFixed(2)} -> ${mine.mean.toFixed(2)}), p50 ${theirs.p50} -> ${mine.p50} ms` +
      (s.maxAdded === undefined ? '' : `  target <= ${s.maxAdded * 100}%: ${met ? 'met' : 'MISSED'}`);
    added.push(line);
    console.log(`ADDED ${line}`);
  }
  console.log(`${CONNECTIONS} connections, ${DURATION} s per measurement, ${ROUNDS} rounds`);
  if (!filter && !SMOKE) writeResults([...results.values()], added);
  if (SMOKE) {
    console.log(`bench smoke: ${results.size} scenarios answered through the whole stack (timings are not gated here)`);
  } else {
    if (!filter || 'video'.includes(filter)) await benchVideo();
    if (!filter || 'speech'.includes(filter)) await benchSpeech();
    if (!filter || 'image'.includes(filter)) await benchImage();
    if ((!filter || 'queue throughput'.includes(filter)) && !(await queueBench(ROUNDS))) failed++;
    if (!filter || 'runner throughput'.includes(filter)) await runnerBench(ROUNDS);
    if ((!filter || 'reset'.includes(filter)) && !(await resetBench(ROUNDS))) failed++;
    if (!filter || 'batch'.includes(filter)) await batchBench();
    if (!filter || 'rl'.includes(filter)) await benchRl();
    if ((!filter || 'start'.includes(filter)) && !(await startBench())) failed++;
  }
  process.exitCode = failed ? 1 : 0;
} finally {
  for (const c of children) c.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}

/** The scenarios' figures of a whole run, committed with the code: a change is compared against them (README). */
function writeResults(rows: Result[], added: string[]): void {
  const commit = (() => {
    try {
      return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root }).toString().trim();
    } catch {
      return 'unknown';
    }
  })();
  const lines = [
    '# Benchmark results',
    '',
    `Written by \`npm run bench\` (a whole run, no filter) at commit ${commit}, ${new Date().toISOString().slice(0, 10)}, on a machine of ${cpus().length} cores`,
    `(load average ${loadavg()[0]!.toFixed(1)} at the end). Each scenario: the whole stack against a bare Express route answering the same body,`,
    `median of ${ROUNDS} alternating rounds of ${DURATION} s with ${CONNECTIONS} connections (1 for latency targets). Ratio = whole-stack req/s / bare req/s;`,
    'CPU ratio = bare CPU per request / whole-stack CPU per request. Compare a change against this file: run the bench on a quiet machine',
    'before and after, and say in the change which ratio moved and why.',
    '',
    '| scenario | ratio | CPU ratio | CPU µs/req (bare) | p50 ms | target | met |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${r.ratio.toFixed(2)} | ${r.cpuRatio.toFixed(2)} | ${r.cpuPerRequest.toFixed(0)} (${r.bareCpuPerRequest.toFixed(0)}) | ${r.p50} | ${r.target} | ${r.met ? 'yes' : 'no'} |`,
    ),
    '',
    'What a setting adds against its baseline scenario (CPU per request):',
    '',
    ...added.map((a) => `- ${a}`),
    '',
  ];
  writeFileSync(join(root, 'test/bench/RESULTS.md'), lines.join('\n'));
}
