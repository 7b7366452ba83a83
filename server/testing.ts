// `inference-platform/testing`: the platform started from a test suite, as a dev dependency. One call starts it
// (in a child process by default, or in this one) on a throw-away SQLite database and answers where it listens, a
// development key, the control key and the typed control client; `stop()` ends it and removes what it made.
//
//   import { startPlatform } from 'inference-platform/testing';
//   const platform = await startPlatform();
//   // ... point the application at platform.url with platform.apiKey; steer it with platform.control
//   await platform.stop();
//
// The process's environment is not read (a test suite's own DATABASE_URL or PORT are the application's): settings
// are given as options, and any other variable of the README's Configuration in `env`.

import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ControlClient, createControlClient } from '@inference-platform/client';

// What a test file needs to steer or call the platform started in a global setup, from this one import.
export {
  type ControlClient,
  createControlClient,
  createPlatformClient,
  type PlatformClient,
  PlatformError,
} from '@inference-platform/client';

export interface StartPlatformOptions {
  /** Where the platform runs: a child process (default; isolated, stopped if this process dies) or this process. */
  in?: 'child' | 'process';
  /** The port (default 0: a free one). */
  port?: number;
  /** The address listened on (default 127.0.0.1). */
  host?: string;
  /**
   * The folder for the SQLite database and stored files, kept after `stop()` (a later start on it finds its data;
   * it prints no new development key, so `apiKey` is then a key made for this start). Default: a throw-away folder,
   * removed by `stop()`.
   */
  dataDir?: string;
  /** A fixtures document (YAML or JSON, the spec's `Fixtures` schema) applied at start: FIXTURES_FILE. */
  fixtures?: string;
  /** The control key (at least 16 characters); default: a random one. */
  controlKey?: string;
  /** The log level (default `warn`); the child's logs go to this process's standard error. */
  logLevel?: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Any other variable of the README's Configuration, e.g. `{ RATE_LIMITS: 'off', DATABASE_URL: 'postgres://...' }`. */
  env?: Record<string, string>;
}

export interface RunningPlatform {
  /** Where it listens, e.g. `http://127.0.0.1:41234` (paths carry their `/v1` or `/v2`). */
  url: string;
  /** An API key of the default project (what `Authorization: Bearer` takes). */
  apiKey: string;
  /** The control key (`/_control/`). */
  controlKey: string;
  /** The typed control client: reset, snapshot/restore, script, fault, journal, time, rate limits, fixtures. */
  control: ControlClient;
  /** The folder holding its database and files. */
  dataDir: string;
  /** Stops it (requests in flight finish first) and removes the throw-away folder. */
  stop(): Promise<void>;
}

// The bin beside this file: in a checkout server/cli.js (which runs the checkout's start copy), in the published
// package its built CLI (server/dist/cli.js).
const bin = join(dirname(fileURLToPath(import.meta.url)), 'cli.js');

/** What the start command prints with `--json`. */
interface Started {
  url: string;
  api_key: string | null;
  control_key: string | null;
  data_dir: string;
}

export async function startPlatform(options: StartPlatformOptions = {}): Promise<RunningPlatform> {
  const controlKey = options.controlKey ?? options.env?.CONTROL_KEY ?? `ctl_${randomBytes(24).toString('base64url')}`;
  const throwAway = options.dataDir === undefined;
  const dataDir = throwAway ? mkdtempSync(join(tmpdir(), 'inference-platform-')) : resolve(options.dataDir!);
  const removeData = () => {
    if (throwAway) rmSync(dataDir, { recursive: true, force: true });
  };
  const settings: Record<string, string> = {
    PORT: String(options.port ?? 0),
    HOST: options.host ?? '127.0.0.1',
    DATA_DIR: dataDir,
    DATABASE_URL: `file:${join(dataDir, 'platform.db')}`,
    CONTROL_KEY: controlKey,
    LOG_LEVEL: options.logLevel ?? 'warn',
    ...(options.fixtures === undefined ? {} : { FIXTURES_FILE: resolve(options.fixtures) }),
    ...options.env,
  };
  let started: Handle | undefined;
  try {
    started = options.in === 'process' ? await inProcess(settings) : await inChild(settings);
    const control = createControlClient({ baseUrl: started.url, controlKey });
    // A folder started before printed its development key then: this start makes one of its own.
    const apiKey = started.apiKey ?? (await mintKey(control));
    const running = started;
    return {
      url: started.url,
      apiKey,
      controlKey,
      control,
      dataDir,
      stop: async () => {
        await running.stop();
        removeData();
      },
    };
  } catch (err) {
    await started?.stop().catch(() => {});
    removeData();
    throw err;
  }
}

interface Handle {
  url: string;
  apiKey: string | null;
  stop(): Promise<void>;
}

async function mintKey(control: ControlClient): Promise<string> {
  const secret = `tpk_testing-${randomBytes(24).toString('base64url')}`;
  await control.fixtures({ projects: [{ project: 'default', api_keys: [{ name: 'testing', secret }] }] });
  return secret;
}

async function inProcess(settings: Record<string, string>): Promise<Handle> {
  const [{ loadConfig }, { startPlatform: start }, { createLogger }] = await Promise.all([
    import('./core/config.ts'),
    import('./platform.ts'),
    import('./core/log.ts'),
  ]);
  const config = loadConfig(settings);
  const platform = await start(config, { log: createLogger(config.logLevel) });
  await platform.announced();
  return { url: platform.url!, apiKey: platform.firstKey, stop: () => platform.close() };
}

async function inChild(settings: Record<string, string>): Promise<Handle> {
  const { variables } = await import('./core/config.ts');
  // This process's own settings of the platform's variables are not passed on: only `settings` are.
  const ours = new Set(variables.map((v) => v.name));
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !ours.has(name) && !/^DURATION_\w+_MS$/.test(name)));
  // The young generation's size `npm start` gives the server (fewer collections while it starts and serves).
  const child = spawn(process.execPath, ['--max-semi-space-size=64', bin, 'start', '--json', '--exit-with-stdin'], {
    env: { ...inherited, ...settings },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | string | null>((done) => child.once('exit', (code, signal) => done(code ?? signal)));
  let errors = '';
  const collect = (chunk: Buffer) => {
    errors = (errors + chunk).slice(-8_000);
  };
  child.stderr!.on('data', collect);
  const started = await new Promise<Started>((resolveStart, reject) => {
    const fail = (err: Error) => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      reject(err);
    };
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk;
      const line = out.indexOf('\n');
      if (line < 0) return;
      child.stdout!.off('data', onData);
      child.stdout!.resume();
      try {
        resolveStart(JSON.parse(out.slice(0, line)) as Started);
      } catch {
        fail(new Error(`the platform printed something other than its JSON line: ${out.slice(0, 500)}`));
      }
    };
    child.stdout!.on('data', onData);
    exited.then((code) => reject(new Error(`the platform exited (${code}) before it was ready: ${errors.trim() || out.trim()}`)));
  });
  // Once started, its warnings and errors are this process's to see.
  child.stderr!.off('data', collect);
  child.stderr!.pipe(process.stderr, { end: false });
  return { url: started.url, apiKey: started.api_key, stop: () => stopChild(child, exited) };
}

/** SIGTERM (requests in flight finish), then SIGKILL if it has not ended after its grace. */
async function stopChild(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(killer);
}
