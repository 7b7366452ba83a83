// A real server process (`node server/start.js`), as `npm start` runs it, on a given database.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { root } from '../../server/core/paths.ts';
import { ensureBuilt } from '../../server/launch.js';

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  /** The development key, when this start created the database's defaults. */
  key?: string;
  stop(signal?: NodeJS.Signals): Promise<number | string | null>;
}

/** What `npm start` runs (`node server/start.js`), the path absolute so that the process may run in any directory. */
export const START = join(root, 'server/start.js');

/** How much of a server process's last output is kept, to show if it fails by itself. */
const LAST_OUTPUT = 8192;

export async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  await ensureBuilt();
  const child = spawn(process.execPath, [START], {
    cwd: root,
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | string | null>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  let stopping = false;
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk;
      if (!/(API key.*|existing database.*)\n/.test(out)) return;
      child.stdout!.off('data', onData);
      // Its log after the start is read but not shown, except the last of it when the process fails by itself (a
      // crash logs its fatal line there, on stdout, and exits 1): the test that sees requests fail then also says why.
      // (A test's own kill ends it by a signal, a stop with 0.)
      let last = '';
      child.stdout!.on('data', (more: Buffer) => {
        last = (last + more).slice(-LAST_OUTPUT);
      });
      void exited.then((code) => {
        if (!stopping && typeof code === 'number' && code !== 0)
          process.stderr.write(`server process ${child.pid} exited by itself with ${code}; the end of its log:\n${last}\n`);
      });
      resolve({
        child,
        url: out.match(/listening on (http:\/\/\S+)/)![1],
        key: out.match(/(tpk_[\w-]+)/)?.[1],
        stop: async (signal = 'SIGTERM') => {
          stopping = true;
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          return exited;
        },
      });
    };
    child.stdout!.on('data', onData);
    exited.then((code) => reject(new Error(`server exited with ${code} before it was ready: ${out}`)));
  });
}
