// A PostgreSQL cluster of a test's own, on its own port, that the test may stop and start (an outage) without
// disturbing the machine's shared server, which other test files use at the same time. Made with the installed
// server binaries (initdb into a temporary folder, trust authentication, listening on 127.0.0.1 only); as root,
// they run as the `postgres` user, since PostgreSQL refuses to run as root.
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const BIN = (() => {
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base) ? readdirSync(base).filter((v) => existsSync(join(base, v, 'bin', 'initdb'))) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  return process.env.PG_BIN ?? (newest ? join(base, newest, 'bin') : undefined);
})();

/** Whether this machine can run a private cluster (the server binaries are installed). */
export const privatePostgresAvailable = BIN !== undefined && existsSync(join(BIN, 'pg_ctl'));

export interface PrivatePostgres {
  /** The cluster's `postgres` database. */
  url: string;
  port: number;
  /** Stops the server: `fast` ends every session (as a restart does), `immediate` as a crash. */
  stop(mode?: 'fast' | 'immediate'): void;
  start(): void;
  /** Stops it (if running) and deletes its folder. */
  destroy(): void;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function run(tool: string, args: string[]): void {
  const asRoot = process.getuid?.() === 0;
  const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', join(BIN!, tool), ...args]] : [join(BIN!, tool), args];
  execFileSync(cmd, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  if (!privatePostgresAvailable) throw new Error('no PostgreSQL server binaries (set PG_BIN)');
  const dir = mkdtempSync(join(tmpdir(), 'private-pg-'));
  if (process.getuid?.() === 0) {
    const ids = execFileSync('id', ['-u', 'postgres']).toString().trim();
    const gid = execFileSync('id', ['-g', 'postgres']).toString().trim();
    chownSync(dir, Number(ids), Number(gid));
  }
  const data = join(dir, 'data');
  run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const port = await freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
  let running = false;
  const start = () => {
    run('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', 'start']);
    running = true;
  };
  const stop = (mode: 'fast' | 'immediate' = 'fast') => {
    run('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop']);
    running = false;
  };
  start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start,
    stop,
    destroy: () => {
      if (running) stop('immediate');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
