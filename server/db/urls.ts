// Database URLs: `file:<path>` (or a bare path) is SQLite, `postgres://` / `postgresql://` is PostgreSQL.
import type { PoolConfig } from 'pg';
import type { Provider } from '../paths.ts';

export function providerOf(url: string): Provider {
  return /^postgres(ql)?:\/\//.test(url) ? 'postgresql' : 'sqlite';
}

export function sqliteFile(url: string): string {
  return url.replace(/^file:/, '');
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
