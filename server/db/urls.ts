// Database URLs: `file:<path>` (or a bare path) is SQLite; `postgres://` or `postgresql://` is PostgreSQL; any other
// scheme is refused rather than mistaken for a file name.
import type { PoolConfig } from 'pg';
import { StartError } from '../core/errors.ts';
import type { Provider } from '../core/paths.ts';

export function providerOf(url: string): Provider {
  if (/^postgres(ql)?:\/\//i.test(url)) return 'postgresql';
  if (url.startsWith('file:') || !/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return 'sqlite';
  throw new StartError(
    `DATABASE_URL=${maskUrl(url)} names a database this platform does not support: use file:<path> (SQLite, the default) or postgres://user@host:5432/database (PostgreSQL).`,
  );
}

export function sqliteFile(url: string): string {
  return url.replace(/^file:/, '');
}

/** The URL with its password replaced, for messages and logs. */
export function maskUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, '$1:****@');
}

/** Discrete fields rather than a connection string, so that nothing in the URL overrides what we set. */
export function pgConfig(url: string): PoolConfig {
  const u = new URL(url);
  return {
    host: u.hostname,
    port: Number(u.port || 5432),
    user: decodeURIComponent(u.username) || undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    database: u.pathname.slice(1) || undefined,
    options: u.searchParams.get('options') ?? undefined,
  };
}
