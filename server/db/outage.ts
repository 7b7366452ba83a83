// Whether a failure says the database cannot be reached or written right now (an outage: the server stopped or
// restarting, the network cut, connections exhausted, the SQLite file locked, moved, read-only or its disk full),
// as opposed to a statement that is wrong. The HTTP layer answers an outage 503 with Retry-After, not 500: nothing
// was written, and the same request will work once the database is back.
//
// Each layer says it its own way, and an error may carry the lower layers' words as causes: Prisma's codes, the
// driver adapters' error kinds, PostgreSQL's SQLSTATE, SQLite's result codes, and node-postgres's and Node's own
// socket errors (the LISTEN connection and the pool's connect timeout).

/** Prisma: can't reach the server, timed out, closed the connection, pool timeout, too many connections. */
const PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2037']);
/** The driver adapters' kinds (SQLite's SQLITE_BUSY after the busy timeout is `SocketTimeout`). */
const ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);
/**
 * PostgreSQL: 08 connection exceptions, 53 insufficient resources (disk full, out of memory, too many
 * connections), 57P01-57P03 shut down by the administrator, crashed, cannot connect now (starting or stopping),
 * 58 system errors (I/O), 25006 a read-only transaction (a standby after a failover).
 */
const SQLSTATE = /^(08...|53...|57P0[1-3]|58...|25006)$/;
/** SQLite: locked by another process, read-only (the file moved or not writable), cannot open, disk full, I/O. */
const SQLITE = /^SQLITE_(BUSY|READONLY|CANTOPEN|FULL|IOERR|PERM|PROTOCOL)/;
const SOCKET = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** node-postgres's own words (no code) for a connection lost, or not made in time. */
const PG_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;
/** Prisma's interactive transaction could not start within its wait: every connection is taken or being made. */
const TX_START = /Unable to start a transaction in the given time/;

export class DatabaseOutage extends Error {}

// biome-ignore lint/suspicious/noExplicitAny: anything can be thrown; its fields are probed.
export function isDatabaseOutage(err: any, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 4) return false;
  if (err instanceof DatabaseOutage) return true;
  const code = typeof err.code === 'string' ? err.code : undefined;
  if (code && (PRISMA_CODES.has(code) || SQLITE.test(code) || SOCKET.has(code) || SQLSTATE.test(code))) return true;
  if (code === 'P2028' && TX_START.test(String(err.message))) return true;
  if (typeof err.kind === 'string' && ADAPTER_KINDS.has(err.kind)) return true;
  const original = err.originalCode;
  if (typeof original === 'string' && (SQLSTATE.test(original) || SQLITE.test(original))) return true;
  if (code === undefined && typeof err.message === 'string' && PG_MESSAGES.test(err.message)) return true;
  return isDatabaseOutage(err.meta?.driverAdapterError, depth + 1) || isDatabaseOutage(err.cause, depth + 1);
}
