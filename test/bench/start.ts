// `npm run bench -- start`: how long a start takes, measured as a whole process, median of BENCH_STARTS (default 5):
// - `npm start` (npm itself included, the start copy current) on a fresh SQLite database, to the printed development
//   key (goal: 1.5 s);
// - the same on a database that exists (to the line saying so), the common start of a developer's machine;
// - `startPlatform` of the testing entry as the package ships it (server/dist/, built first by `npm run build` and
//   removed after), from a new node process's start to the first answered request, in a child process (the
//   default) and in the same process (goal: 1.5 s each).
// Besides wall time, each reports the CPU the processes spent (user + system, from /proc): steadier on a shared machine.
// A start gets every core, as a start on a developer's machine does: `npm run bench` pins itself (and so whatever it
// starts) to the cores its throughput servers leave free, one of two here, where a start's threads (the collector's,
// the compilers') read 1.85 s to the key instead of 1.45 s (measured).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { root } from '../../server/core/paths.ts';
import { ensureBuilt } from '../../server/launch.js';

const STARTS = Number(process.env.BENCH_STARTS ?? 5);
const GOAL_MS = 1_500;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Sample {
  wallMs: number;
  cpuMs: number;
}

/** CPU (user + system, of children waited for too) of a process and every descendant still running, in ms. */
function treeCpuMs(pid: number): number {
  let total = 0;
  const visit = (p: number) => {
    try {
      const fields = readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]!.split(' ');
      // utime, stime, cutime, cstime, in clock ticks of 10 ms
      total += (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10;
      for (const child of readFileSync(`/proc/${p}/task/${p}/children`, 'utf8').trim().split(/\s+/).filter(Boolean)) visit(Number(child));
    } catch {
      // gone meanwhile
    }
  };
  visit(pid);
  return total;
}

/**
 * Runs `command` (in a process group of its own) until its output matches `ready`; answers the wall time and the
 * tree's CPU then. The group is then stopped with SIGTERM, or (`ends`) left to end by itself (a script that stops
 * what it started, and removes its throw-away folder).
 */
function timeTo(command: string, args: string[], env: Record<string, string>, ready: RegExp, ends = false): Promise<Sample> {
  const started = performance.now();
  const child = spawn(command, args, {
    cwd: root,
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk;
      if (!ready.test(out)) return;
      const wallMs = performance.now() - started;
      const cpuMs = treeCpuMs(child.pid!);
      child.stdout!.off('data', onData);
      child.once('exit', () => resolve({ wallMs, cpuMs }));
      if (!ends) process.kill(-child.pid!, 'SIGTERM');
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c) => (out += c));
    child.once('exit', (code) => {
      if (!ready.test(out)) reject(new Error(`${command} ${args.join(' ')} exited with ${code}: ${out}`));
    });
  });
}

async function series(name: string, run: (dir: string) => Promise<Sample>, goalMs?: number): Promise<boolean> {
  const samples: Sample[] = [];
  for (let i = 0; i < STARTS; i++) {
    const dir = mkdtempSync(join(tmpdir(), 'platform-start-bench-'));
    try {
      samples.push(await run(dir));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const wall = median(samples.map((s) => s.wallMs));
  const cpu = median(samples.map((s) => s.cpuMs));
  const met = goalMs === undefined || wall <= goalMs;
  console.log(
    `RESULT ${name}: median ${wall.toFixed(0)} ms wall, ${cpu.toFixed(0)} ms CPU (${samples.map((s) => s.wallMs.toFixed(0)).join(', ')} ms)` +
      (goalMs === undefined ? '' : `  target <= ${goalMs} ms: ${met ? 'met' : 'MISSED'}`),
  );
  return met;
}

/** A script starting the built testing entry `in` a child or this process, printing `answered` once whoami answers. */
function startScript(dir: string, mode: 'child' | 'process'): string {
  const script = join(dir, 'start.mjs');
  writeFileSync(
    script,
    `import { startPlatform } from ${JSON.stringify(join(root, 'server/dist/testing.js'))};
const p = await startPlatform({ in: '${mode}' });
const res = await fetch(p.url + '/v1/whoami', { headers: { authorization: 'Bearer ' + p.apiKey } });
if (res.status !== 200) throw new Error('whoami answered ' + res.status);
console.log('answered');
await p.stop();
`,
  );
  return script;
}

/** This process (and so each process it starts from now on) back on every core, where taskset can do that. */
function unpin(): void {
  try {
    execFileSync('taskset', ['-a', '-p', '-c', `0-${cpus().length - 1}`, String(process.pid)], { stdio: 'ignore' });
  } catch {
    // no taskset: never pinned either
  }
}

export async function startBench(): Promise<boolean> {
  unpin();
  // `npm start` runs the checkout's start copy, built first when it is not current (server/launch.js): that build is
  // once after a change, not part of a start.
  await ensureBuilt();
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const database = (dir: string) => ({ DATABASE_URL: `file:${join(dir, 'p.db')}`, DATA_DIR: dir });
  let met = await series('npm start, fresh database, to the printed key', (dir) => timeTo(npm, ['start', '--silent'], database(dir), /API key.*\n/), GOAL_MS);
  await series('npm start, existing database', async (dir) => {
    await timeTo(npm, ['start', '--silent'], database(dir), /API key.*\n/);
    return timeTo(npm, ['start', '--silent'], database(dir), /existing database.*\n/);
  });
  execFileSync(process.execPath, ['--import', 'tsx', 'server/tools/build.ts'], { cwd: root, stdio: 'ignore' });
  try {
    for (const mode of ['child', 'process'] as const) {
      const name = `startPlatform (testing entry, in: '${mode}'), process start to the first answer`;
      met = (await series(name, (dir) => timeTo(process.execPath, [startScript(dir, mode)], {}, /answered\n/, true), GOAL_MS)) && met;
    }
  } finally {
    rmSync(join(root, 'server/dist'), { recursive: true, force: true });
  }
  return met;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = (await startBench()) ? 0 : 1;
