// Server processes started as `npm start` starts them (server-process.ts's START), watched from outside: their
// stdout, their output, their end. For the startup tests (test/startup*.test.ts); `spawnedServers()` registers, in
// the calling file, the removal of its folders and the end of its processes.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';
import { root } from '../../server/core/paths.ts';
import { until } from './expect.ts';
import { START } from './server-process.ts';

export interface Spawned {
  child: ChildProcess;
  /** stdout only. */
  stdout(): string;
  /** stdout and stderr together, in arrival order. */
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** A line of a stack trace. */
export const STACK_LINE = /^\s+at\s.+(:\d+:\d+\)?|\(native\)|<anonymous>\)?)$/m;
export const lines = (text: string) => text.split('\n').filter((l) => l.trim() !== '');

export function spawnedServers() {
  const dirs: string[] = [];
  const running = new Set<ChildProcess>();
  afterAll(() => {
    for (const child of running) child.kill('SIGKILL');
    running.clear();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return {
    freshDir(): string {
      const dir = mkdtempSync(join(tmpdir(), 'platform-startup-'));
      dirs.push(dir);
      return dir;
    },
    spawnServer(env: Record<string, string>, cwd = root): Spawned {
      const child = spawn(process.execPath, [START], {
        cwd,
        env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      running.add(child);
      let stdout = '';
      let output = '';
      child.stdout!.on('data', (c) => {
        stdout += c;
        output += c;
      });
      child.stderr!.on('data', (c) => (output += c));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        child.once('exit', (code, signal) => {
          running.delete(child);
          resolve({ code, signal });
        }),
      );
      return { child, stdout: () => stdout, output: () => output, exited };
    },
  };
}

/** Waits for the process to end by itself. One that starts serving instead is stopped, and reported as such. */
export async function expectToEnd(p: Spawned, context: () => string = () => '', timeoutMs = 120_000) {
  const outcome = await Promise.race([
    p.exited.then((e) => ({ kind: 'exited' as const, ...e })),
    until(() => /listening on http/.test(p.stdout()), timeoutMs).then((started) => ({ kind: started ? ('started' as const) : ('timeout' as const) })),
  ]);
  if (outcome.kind !== 'exited') {
    p.child.kill('SIGKILL');
    await p.exited;
    expect.fail(`${outcome.kind === 'started' ? 'the server started instead of refusing' : `still running after ${timeoutMs} ms`}: ${p.output()}${context()}`);
  }
  return outcome as { code: number | null; signal: NodeJS.Signals | null };
}
