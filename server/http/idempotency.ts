// Idempotency keys, with Stripe's promise. A request that carries a key runs its writes and stores its response
// (with a hash of its parameters) in one transaction. A retry with the same key and the same parameters gets that
// first response again, whatever happened since; the same key with other parameters is refused with 409
// `idempotency_key_reused`; a request that fails stores nothing, so it can be retried. Keys are scoped to the
// project and the operation. Two requests racing with one key: the second's insert of the key fails on its
// primary key, its writes roll back, and it answers the first one's response.
import { createHash } from 'node:crypto';
import { type Clock, instant } from '../core/clock.ts';
import { taken } from '../core/errors.ts';
import type { Database, Tx } from '../db/index.ts';
import { isUniqueViolation } from './unique.ts';

export interface IdempotencyScope {
  projectId: string;
  operation: string;
  /** The client's key; absent: the request simply runs. */
  key: string | undefined;
  /** Where the key came from, for the 409's `param` (e.g. `remediation_id`, or the `Idempotency-Key` header). */
  param: string;
}

/** JSON with sorted keys, so the same parameters always hash the same. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** Runs `write` (in a write transaction) at most once per key; answers its response, or the stored first one. */
export async function idempotent<T>(db: Database, clock: Clock, scope: IdempotencyScope, parameters: unknown, write: (tx: Tx) => Promise<T>): Promise<T> {
  const { key } = scope;
  if (key === undefined) return db.write(write);
  const requestHash = createHash('sha256').update(canonical(parameters)).digest('hex');
  const where = { projectId_operation_key: { projectId: scope.projectId, operation: scope.operation, key } };
  const attempt = () =>
    db.write(async (tx) => {
      const seen = await tx.idempotencyRecord.findUnique({ where });
      if (seen) {
        if (seen.requestHash !== requestHash) {
          throw taken(`The idempotency key '${key}' was already used with different parameters; use a new key.`, 'idempotency_key_reused', scope.param);
        }
        return JSON.parse(seen.response) as T;
      }
      const response = await write(tx);
      await tx.idempotencyRecord.create({
        data: { projectId: scope.projectId, operation: scope.operation, key, requestHash, response: JSON.stringify(response), createdAt: instant(clock) },
      });
      return response;
    });
  try {
    return await attempt();
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    return attempt();
  }
}
