// Before migrations run: can this database be opened at all? A failure here is a StartError in one line that names
// DATABASE_URL (password masked) and what to do, instead of a stack trace from deep inside the schema engine.
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { maskUrl } from '../core/config.ts';
import { StartError } from '../core/errors.ts';
import type { Provider } from '../core/paths.ts';
import { pgConfig, sqliteFile } from './urls.ts';

export async function preflight(provider: Provider, url: string): Promise<void> {
  const shown = `DATABASE_URL=${maskUrl(url)}`;
  if (provider === 'sqlite') {
    const file = resolve(sqliteFile(url));
    try {
      mkdirSync(dirname(file), { recursive: true });
      new Database(file, { timeout: 10_000 }).close();
    } catch (err) {
      const code = (err as { code?: string }).code ?? (err as Error).message;
      throw new StartError(
        `${shown}: cannot create or open the SQLite file ${file} (${code}). Point DATABASE_URL at a writable path, e.g. file:./.data/platform.db.`,
        err,
      );
    }
    return;
  }
  const config = pgConfig(url);
  const where = `${config.host}:${config.port}`;
  const { default: pg } = await import('pg');
  const client = new pg.Client({ ...config, connectionTimeoutMillis: 10_000 });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (err) {
    const code = (err as { code?: string }).code;
    const hint =
      code === '3D000'
        ? `the database '${config.database}' does not exist on ${where}. Create it (createdb -h ${config.host} -p ${config.port}${config.user ? ` -U ${config.user}` : ''} ${config.database}) or name another one.`
        : code === '28P01' || code === '28000'
          ? `PostgreSQL at ${where} refused user '${config.user ?? ''}' (authentication failed). Fix the user or password in DATABASE_URL.`
          : code === 'ECONNREFUSED' || code === 'ETIMEDOUT' || code === 'EHOSTUNREACH'
            ? `no PostgreSQL server answers at ${where} (${code}). Start PostgreSQL or fix the host and port in DATABASE_URL.`
            : code === 'ENOTFOUND' || code === 'EAI_AGAIN'
              ? `the host '${config.host}' is unknown (${code}). Fix the host in DATABASE_URL.`
              : `cannot connect to PostgreSQL at ${where} (${code ?? (err as Error).message}). Check DATABASE_URL.`;
    throw new StartError(`${shown}: ${hint}`, err);
  } finally {
    await client.end().catch(() => {});
  }
}
