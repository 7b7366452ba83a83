// Assembles a running platform: database (migrated), first-start bootstrap, key cache, runner, HTTP app and
// listener. The entry point (main.ts) and the tests start it the same way.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { bootstrap } from './accounts.ts';
import { createApp, type AppOptions } from './app.ts';
import { KeyCache } from './auth.ts';
import { systemClock, type Clock } from './clock.ts';
import type { Config } from './config.ts';
import { openDatabase } from './db/index.ts';
import { createLogger } from './log.ts';
import { Runner } from './runner.ts';
import { registerWork } from './work.ts';

export interface Platform {
  app: ReturnType<typeof createApp>;
  services: AppOptions;
  /** The development key's secret, on the first start against an empty database only. */
  firstKey: string | null;
  server?: Server;
  url?: string;
  close(): Promise<void>;
}

export async function startPlatform(
  config: Config,
  options: { clock?: Clock; log?: Logger; listen?: boolean; observe?: AppOptions['observe'] } = {},
): Promise<Platform> {
  const clock = options.clock ?? systemClock;
  const log = options.log ?? createLogger(config.logLevel);
  const db = await openDatabase(config.databaseUrl);
  const first = await bootstrap(db, clock);
  const keys = new KeyCache(db, clock, config.keyCacheTtlMs, log);
  await keys.listen();
  const runner = new Runner(db, clock, config.runner, log);
  const services: AppOptions = { config, db, clock, log, runner, keys, observe: options.observe };
  registerWork(runner, services);
  const app = createApp(services);
  runner.start();

  let server: Server | undefined;
  let url: string | undefined;
  if (options.listen !== false) {
    server = await new Promise<Server>((resolve, reject) => {
      const s = app.listen(config.port, config.host, () => resolve(s));
      s.once('error', reject);
    });
    const { address, port } = server.address() as AddressInfo;
    url = `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
  }

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      if (server) {
        const s = server;
        await new Promise<void>((resolve) => {
          s.close(() => resolve());
          s.closeIdleConnections();
        });
      }
      await runner.stop();
      await keys.close();
      await db.close();
    })());
  return { app, services, firstKey: first?.secret ?? null, server, url, close };
}
