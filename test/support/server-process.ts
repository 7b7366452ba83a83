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

export async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  await ensureBuilt();
  const child = spawn(process.execPath, [START], {
    cwd: root,
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | string | null>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk;
      if (!/(API key.*|existing database.*)\n/.test(out)) return;
      child.stdout!.off('data', onData);
      child.stdout!.resume();
      resolve({
        child,
        url: out.match(/listening on (http:\/\/\S+)/)![1],
        key: out.match(/(tpk_[\w-]+)/)?.[1],
        stop: async (signal = 'SIGTERM') => {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          return exited;
        },
      });
    };
    child.stdout!.on('data', onData);
    exited.then((code) => reject(new Error(`server exited with ${code} before it was ready: ${out}`)));
  });
}
