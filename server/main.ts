// `npm start`: the platform on the configured database (a SQLite file by default), until SIGTERM or SIGINT. A start
// that cannot happen (port taken, database unusable) says why in one line and exits 1; the stack only at
// LOG_LEVEL=debug.
import { loadConfig } from './core/config.ts';
import { StartError } from './core/errors.ts';
import { createLogger } from './core/log.ts';
import { type Platform, startPlatform } from './platform.ts';

const config = loadConfig();
const log = createLogger(config.logLevel);

function fail(err: unknown): never {
  const known = err instanceof StartError;
  console.error(known ? err.message : `The platform could not start: ${(err as Error)?.message ?? err}`);
  if (config.logLevel === 'debug' || !known) console.error((known && err.cause instanceof Error ? err.cause : (err as Error))?.stack);
  process.exit(1);
}

let platform: Platform;
try {
  platform = await startPlatform(config, { log });
} catch (err) {
  fail(err);
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 10_000);
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
const lines = [
  `Inference platform API listening on ${url}  (database: ${platform.services.db.provider})`,
  `API reference: ${url}/docs   contract: ${url}/openapi.json`,
];
if (firstKey) {
  lines.push(`Development API key (shown once; only its hash is stored): ${firstKey}`, `Try: curl -H "Authorization: Bearer ${firstKey}" ${url}/v1/whoami`);
} else {
  lines.push('Using the existing database; its development key was printed when it was created. A new key: npx inference-platform keys create');
}
// The key counts as shown once it has been written out: a start that dies before then leaves it to the next one.
process.stdout.write(
  `${lines.join('\n')}\n`,
  () => void platform.announced().catch((err) => log.error({ err }, 'could not record the development key as shown')),
);
