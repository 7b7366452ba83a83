// Assembles a running platform, in an order where every step can fail without leaving anything behind it: take
// the port (a taken one fails before anything is created), open and migrate the database, bootstrap (defaults and
// seeds), the development key, the key cache, the runner with every module's work, the control plane when it is on
// (a guest plugged into the pipeline and the engines, never imported by a module), and the HTTP app. The entry point
// (main.ts) and the tests start it the same way.
import { createServer, type IncomingMessage, type Server, ServerResponse, STATUS_CODES } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { bootstrap, developmentKey, markAnnounced } from './bootstrap.ts';
import { type Clock, OffsetClock, systemClock } from './core/clock.ts';
import type { Config } from './core/config.ts';
import { apiError, StartError } from './core/errors.ts';
import { createLogger } from './core/log.ts';
import { restoreClock } from './db/clock.ts';
import { type Database, openDatabase } from './db/index.ts';
import { Notifications } from './db/notifications.ts';
import { withInterceptors } from './engines/intercept.ts';
import { loadEngineRoutes } from './engines/routes.ts';
import { type AppOptions, createApp } from './http/app.ts';
import { KeyCache } from './http/auth.ts';
import { RateLimits } from './limits/rate-limits.ts';
import { applyFixturesFile, ControlPlane, controlKey, controlModule } from './modules/control/index.ts';
import { modules, servedBy } from './modules/index.ts';
import type { FixtureSections } from './modules/types.ts';
import { Runner } from './runner/runner.ts';

export interface Platform {
  app: ReturnType<typeof createApp>;
  services: AppOptions;
  /** The development key's secret when this start minted one (see bootstrap.ts `developmentKey`); else null. */
  firstKey: string | null;
  /** The control key's secret when this start minted it (no CONTROL_KEY, first start); else null. */
  controlKey: string | null;
  /** The control plane, when CONTROL_API is on. */
  control?: ControlPlane;
  /** Records that `firstKey` has been shown, so no later start replaces it. */
  announced(): Promise<void>;
  server?: Server;
  url?: string;
  close(): Promise<void>;
}

/** Errors of Node's HTTP parser, answered with the envelope like everything else (then the connection closes). */
function parserFailure(err: NodeJS.ErrnoException): { status: number; code: string; message: string } {
  if (err.code === 'HPE_HEADER_OVERFLOW') return { status: 431, code: 'header_too_large', message: 'The request headers are larger than this server accepts.' };
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, code: 'request_timeout', message: 'The request was not received in time.' };
  return { status: 400, code: 'malformed_request', message: 'The request is not valid HTTP/1.1.' };
}

/**
 * Takes the port; the app is attached once the rest has started. Until then every API request answers 503
 * `starting`, and `/healthz` answers 503 `{"status": "starting"}`: healthy means ready to serve the API.
 */
export async function listen(config: Pick<Config, 'host' | 'port'>): Promise<Server> {
  const server = createServer((req, res) => {
    const health = /^\/healthz\/?(\?|$)/.test(req.url ?? '');
    res
      .writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' })
      .end(JSON.stringify(health ? { status: 'starting' } : apiError(503, 'starting', 'The server is starting; retry in a moment.').body));
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable || err.code === 'ECONNRESET') return void socket.destroy();
    const f = parserFailure(err);
    const body = JSON.stringify(apiError(f.status, f.code, f.message).body);
    socket.end(
      `HTTP/1.1 ${f.status} ${STATUS_CODES[f.status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE')
        reject(
          new StartError(
            `Port ${config.port} is already in use: stop what holds it, or start on another port with PORT (e.g. PORT=${config.port + 1} npm start).`,
            err,
          ),
        );
      else if (err.code === 'EACCES')
        reject(new StartError(`Port ${config.port} needs privileges this process lacks: choose another port with PORT (e.g. PORT=8080).`, err));
      else if (['EADDRNOTAVAIL', 'ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EINVAL'].includes(err.code ?? ''))
        reject(
          new StartError(
            `HOST=${config.host} cannot be listened on (${err.code}): it is not an address of this machine. Set HOST to one of its addresses (127.0.0.1, the default; 0.0.0.0 for every interface).`,
            err,
          ),
        );
      else reject(err);
    });
    server.listen(config.port, config.host, () => resolve());
  });
  return server;
}

/** Which keys sign upload URLs and encrypt secret values, as every start says (SECRETS_KEY's value is never shown). */
export function keysInUse(config: Pick<Config, 'secretsKey'>): string {
  return config.secretsKey.trim()
    ? 'Keys: upload URLs are signed and secret values encrypted with SECRETS_KEY.'
    : "Keys: SECRETS_KEY is unset: upload URLs are signed with this database's own random key; secret values are encrypted with the public development key (set SECRETS_KEY in any shared deployment).";
}

export async function startPlatform(
  config: Config,
  options_: { clock?: Clock; log?: Logger; listen?: boolean; observe?: AppOptions['observe'] } = {},
): Promise<Platform> {
  // The control plane moves this clock forward (control/time.ts); everything reads it.
  const clock = new OffsetClock(options_.clock ?? systemClock);
  const log = options_.log ?? createLogger(config.logLevel);
  const server = options_.listen === false ? undefined : await listen(config);
  let db: Database | undefined;
  let limits: RateLimits | undefined;
  let notifications: Notifications | undefined;
  let control: ControlPlane | undefined;
  try {
    db = await openDatabase(config.databaseUrl);
    await restoreClock(db, clock);
    const project = await bootstrap(db, clock);
    log.info({ secretsKey: config.secretsKey.trim() ? 'SECRETS_KEY' : 'unset' }, keysInUse(config));
    const key = await developmentKey(db, clock, project.id);
    const database = db;
    const controlled = await controlKey(db, clock, config.control);
    limits = RateLimits.create(config.rateLimits, config.redisUrl, log, clock);
    await limits.ready();
    // FIXTURES_FILE after the bootstrap, at start and after a platform reset (applied once per database), its
    // sections filled by the modules that own them.
    const sections: FixtureSections = Object.assign({}, ...modules.map((m) => m.fixtureSections));
    await applyFixturesFile({ db, clock, config }, sections);
    notifications = new Notifications(db, log);
    const keys = new KeyCache(db, clock, config.keyCacheTtlMs, notifications);
    const runner = new Runner(db, clock, config.runner, log);
    const engines = withInterceptors(loadEngineRoutes(config.engines));
    const services = { config, db, clock, log, runner, engines, limits };
    for (const m of modules) for (const [kind, work] of Object.entries(m.work?.(services) ?? {})) runner.register(kind, work);
    if (controlled) {
      control = new ControlPlane({
        config,
        services,
        clock,
        notifications,
        keyHash: controlled.hash,
        forgetKeys: () => keys.clear(),
        reseed: async () => {
          await bootstrap(database, clock);
          await applyFixturesFile({ db: database, clock, config }, sections);
        },
        modules,
      });
      engines.intercept = control.interceptors;
    }
    await notifications.start();
    await control?.start();
    const options: AppOptions = {
      ...services,
      keys,
      served: servedBy(control ? [...modules, controlModule(control)] : modules),
      guest: control?.guest,
      observe: options_.observe,
    };
    const app = createApp(options);
    runner.start();

    const upgraded = new Set<Duplex>();
    let url: string | undefined;
    if (server) {
      server.removeAllListeners('request');
      server.on('request', app);
      // A request to upgrade (the realtime websockets) takes the same pipeline, answered on its socket (http/reply.ts upgradeOf).
      server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
        upgraded.add(socket);
        socket.once('close', () => upgraded.delete(socket));
        Object.assign(req, { upgrade: { socket, head } });
        const res = new ServerResponse(req);
        res.assignSocket(socket as Socket);
        res.shouldKeepAlive = false;
        // An answer other than the upgrade ends the connection once written.
        res.once('finish', () => res.statusCode !== 101 && socket.end());
        app(req, res);
      });
      const { address, port } = server.address() as AddressInfo;
      url = `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
    }
    const limiter = limits;
    let closing: Promise<void> | undefined;
    const close = () =>
      (closing ??= (async () => {
        if (server) {
          for (const socket of upgraded) socket.destroy();
          await new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeIdleConnections();
          });
        }
        for (const m of modules) if ('stop' in m) m.stop?.(services);
        await runner.stop();
        await control?.close();
        await notifications?.close();
        await limiter.close();
        await database.close();
      })());
    return {
      app,
      services: options,
      firstKey: key?.secret ?? null,
      controlKey: controlled?.minted ?? null,
      control,
      announced: async () => {
        if (key) await markAnnounced(database, clock, key.id);
      },
      server,
      url,
      close,
    };
  } catch (err) {
    server?.close();
    await control?.close().catch(() => {});
    await notifications?.close();
    await limits?.close();
    await db?.close().catch(() => {});
    throw err;
  }
}
