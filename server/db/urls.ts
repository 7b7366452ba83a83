// Database URLs: `file:<path>` (or a bare path) is SQLite; `postgres://` or `postgresql://` is PostgreSQL; any other
// scheme (`mysql://`, `sqlite:`) is refused rather than mistaken for a file name (the configuration's schema,
// core/config.ts, refuses the same at start).
import type { PoolConfig } from 'pg';
import { maskUrl } from '../core/config.ts';
import { StartError } from '../core/errors.ts';
import type { Provider } from '../core/paths.ts';

/** A URL scheme (two characters at least: `C:\\data` is a path). */
const SCHEME = /^[a-z][a-z0-9+.-]+:/i;

export function providerOf(url: string): Provider {
  if (/^postgres(ql)?:\/\//i.test(url)) return 'postgresql';
  if (url.startsWith('file:') || !SCHEME.test(url)) return 'sqlite';
  throw new StartError(
    `DATABASE_URL=${maskUrl(url)} names a database this platform does not support: use file:<path> (SQLite, the default) or postgres://user@host:5432/database (PostgreSQL).`,
  );
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
