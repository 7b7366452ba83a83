// Unique indexes decide races. A handler checks a name before it writes and refuses a taken one with a 409; two
// requests that pass the check at once both write, and the database's unique index refuses the second. `uniquely`
// turns that refusal into the same 409, on SQLite and on PostgreSQL alike.
import type { ApiError } from '../core/errors.ts';

/** Whether `err` is a unique-index violation (Prisma's P2002, or the driver adapter's own report of one). */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string; cause?: unknown; meta?: { driverAdapterError?: { cause?: { kind?: string } } } } | null;
  if (!e) return false;
  if (e.code === 'P2002' || e.code === '23505' || e.code === 'SQLITE_CONSTRAINT_UNIQUE' || e.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') return true;
  if (e.meta?.driverAdapterError?.cause?.kind === 'UniqueConstraintViolation') return true;
  return e.cause !== undefined && e.cause !== err && isUniqueViolation(e.cause);
}

/** Runs `write`; a unique-index violation becomes `taken()`, the same error the check before the write throws. */
export async function uniquely<T>(write: () => Promise<T>, taken: () => ApiError): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (isUniqueViolation(err)) throw taken();
    throw err;
  }
}
