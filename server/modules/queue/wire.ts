// Module `queue`: rows -> wire shapes.
import type { QueueJob } from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import type { Wire } from '../types.ts';

export function queueJobWire(j: QueueJob): Wire<'QueueJobStatusResponse'> {
  return {
    request_id: j.id,
    model: j.model,
    status: j.status as Wire<'QueueJobStatusResponse'>['status'],
    created_at: iso(j.createdAt),
    ...(j.claimedAt !== null && { claimed_at: iso(j.claimedAt) }),
    ...(j.doneAt !== null && { done_at: iso(j.doneAt) }),
    priority: j.priority,
    retries: j.retries,
    info: JSON.parse(j.info),
    inputs: JSON.parse(j.inputs),
    ...(j.outputs !== null && { outputs: JSON.parse(j.outputs) }),
    warnings: JSON.parse(j.warnings),
  };
}

/** A job as its claimer gets it: with the token its later moves carry, and when the claim runs out. */
export function claimedJobWire(j: QueueJob): Wire<'QueueClaimedJob'> {
  return { ...queueJobWire(j), claim_token: j.claimToken!, claim_expires_at: iso(j.claimUntil!) };
}
