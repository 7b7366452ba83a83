// `npm start`: the platform on the configured database (a SQLite file by default), until SIGTERM or SIGINT.
import { loadConfig } from './config.ts';
import { startPlatform } from './platform.ts';

const config = loadConfig();
const platform = await startPlatform(config);
const { url, firstKey } = platform;
const log = platform.services.log;

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    platform.close().then(
      () => log.flush(() => process.exit(0)),
      (err) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}

console.log(`Inference platform API listening on ${url}  (database: ${platform.services.db.provider})`);
console.log(`API reference: ${url}/docs   contract: ${url}/openapi.json`);
if (firstKey) {
  console.log(`Development API key (shown once; only its hash is stored): ${firstKey}`);
  console.log(`Try: curl -H "Authorization: Bearer ${firstKey}" ${url}/v1/whoami`);
} else {
  console.log('Using the existing database; its development key was printed on first start. New key: npm run cli -- keys create');
}

