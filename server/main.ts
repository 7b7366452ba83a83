// `npm start`: the platform on the configured database (a SQLite file by default), until SIGTERM or SIGINT. A start
// that cannot happen (a variable that cannot be used, port taken, database unusable) says why in one line and exits
// 1; the stack only at LOG_LEVEL=debug. With `--json` (`npm start -- --json`, or the bin's `start --json`) it prints
// one JSON line for scripts instead of its banner, and its logs go to standard error.
import { setFlagsFromString } from 'node:v8';
import pino from 'pino';
import { type Config, loadConfig, unknownVariables } from './core/config.ts';
import { startFailure } from './core/errors.ts';
import { createLogger } from './core/log.ts';
import { preflight } from './db/preflight.ts';
import { providerOf } from './db/urls.ts';
import type { Platform } from './platform.ts';

function fail(err: unknown, debug: boolean): never {
  console.error(startFailure(err, debug));
  process.exit(1);
}

// Prisma's query compiler is a 3 MB WebAssembly module; V8 would recompile it with its optimising tier in the
// background as the first queries run, about 0.6 s of CPU while the server starts, on a 2-core machine taken from the
// start itself. Its baseline code serves as well here: each query's plan is compiled once and cached (Prisma's query
// plan cache), and request costs measured the same either way. Set before the module is compiled (at the database's
// opening); a process that embeds the platform (the testing entry's `in: 'process'`) keeps its own flags.
setFlagsFromString('--no-wasm-tier-up');
setFlagsFromString('--no-wasm-dynamic-tiering');

let config: Config;
try {
  config = loadConfig();
} catch (err) {
  fail(err, process.env.LOG_LEVEL === 'debug');
}
const json = process.argv.includes('--json');
const log = createLogger(config.logLevel, json ? pino.destination({ dest: 2, sync: true }) : undefined);
// A variable that looks like ours but is not read is most likely misspelt; the environment is shared, so only a warning.
for (const variable of unknownVariables()) log.warn({ variable }, `${variable} is not a setting of this server and is ignored (see README.md, Configuration)`);

// The platform's modules are loaded once the settings are known to be usable: a start refused for a variable, a
// database URL of another kind, or a PostgreSQL server that cannot be used says so without first loading the whole
// server. (A SQLite file is not opened here: the start places a migrated copy where none is.)
try {
  if (providerOf(config.databaseUrl) === 'postgresql') await preflight('postgresql', config.databaseUrl);
} catch (err) {
  fail(err, config.logLevel === 'debug');
}
const { keysInUse, startPlatform } = await import('./platform.ts');
let platform: Platform;
try {
  platform = await startPlatform(config, { log });
} catch (err) {
  fail(err, config.logLevel === 'debug');
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    log.info({ signal, graceMs: config.shutdownGraceMs }, 'shutting down');
    // Requests that never finish (a client that stops sending its body) must not hold the process past its grace.
    const force = setTimeout(() => {
      log.warn({ graceMs: config.shutdownGraceMs }, 'shutdown grace period over: exiting with work unfinished');
      log.flush(() => process.exit(1));
      setTimeout(() => process.exit(1), 1_000).unref();
    }, config.shutdownGraceMs);
    force.unref();
    platform.close().then(
      () => log.flush(() => process.exit(0)),
      (err) => {
        log.error({ err }, 'shutdown failed');
        log.flush(() => process.exit(1));
      },
    );
  });
}
// A crash still gets its last lines out.
process.on('uncaughtException', (err) => {
  log.fatal({ err }, 'uncaught exception');
  log.flush(() => process.exit(1));
});

const { url, firstKey } = platform;
// The key counts as shown once it has been written out: a start that dies before then leaves it to the next one.
const announced = () => void platform.announced().catch((err) => log.error({ err }, 'could not record the development key as shown'));
if (json) {
  const started = {
    url,
    api_key: firstKey,
    control_key: config.control.enabled ? (platform.controlKey ?? config.control.key ?? null) : null,
    data_dir: config.dataDir,
    database: platform.services.db.provider,
  };
  process.stdout.write(`${JSON.stringify(started)}\n`, announced);
}
const lines = [
  `Inference platform API listening on ${url}  (database: ${platform.services.db.provider})`,
  `API reference: ${url}/docs   contract: ${url}/openapi.json`,
  keysInUse(config),
];
if (firstKey) {
  lines.push(`Development API key (shown once; only its hash is stored): ${firstKey}`, `Try: curl -H "Authorization: Bearer ${firstKey}" ${url}/v1/whoami`);
} else {
  lines.push('Using the existing database; its development key was printed when it was created. A new key: npx inference-platform keys create');
}
if (platform.controlKey) lines.push(`Control key for tests (${url}/_control/; shown once; or set CONTROL_KEY): ${platform.controlKey}`);
else if (!config.control.enabled) lines.push('Control plane: off (CONTROL_API=off).');
if (!json) process.stdout.write(`${lines.join('\n')}\n`, announced);
