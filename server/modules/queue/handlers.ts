// Module `queue`: submit, status, cancel, metrics and clear (the platform's), and the worker API (this server's:
// claim, heartbeat, complete, fail). Every job is addressed by its request id AND its model, in the caller's project.
import type { QueueJob } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import type { Db, Tx } from '../../db/index.ts';
import { owned } from '../../http/scope.ts';
import { transition } from '../../runner/progress.ts';
import type { Context } from '../types.ts';
import { claimJobs, claimTimeoutMs, completeHeld, finishJob, heartbeatJob, queueJobs, queueMachine } from './machine.ts';
import { queueOf } from './rules.ts';
import { insertJob, newJob } from './submit.ts';
import { claimedJobWire, queueJobWire } from './wire.ts';

/** The caller's job with this request id in this model's queue, or the 404 of an absent one. */
const findJob = (db: Db | Tx, projectId: string, requestId: string, model: string): Promise<QueueJob> =>
  owned(db.queueJob, projectId, { id: requestId, model: queueOf(model).model }, { what: 'queue job', id: requestId, param: 'request_id' });

export async function submitQueueJob({ db, clock, identity, body }: Context<'submitQueueJob'>) {
  const { data, builtIn } = await newJob(db.prisma, clock, identity.projectId, body);
  // A job for a built-in worker is stored with the worker's work item; any other is one INSERT.
  if (builtIn) await db.write((tx) => insertJob(tx, clock, data, true));
  else await db.writeStatement((c) => c.queueJob.create({ data }));
  return { requestId: data.id };
}

export async function getQueueJobStatus({ db, identity, query }: Context<'getQueueJobStatus'>) {
  return queueJobWire(await findJob(db.prisma, identity.projectId, query.request_id, query.model));
}

export async function cancelQueueJob(ctx: Context<'cancelQueueJob'>) {
  const { db, identity, body } = ctx;
  return db.write(async (tx) => {
    const job = await findJob(tx, identity.projectId, body.request_id, body.model);
    // A cancel retried after it succeeded answers the same.
    if (job.status !== 'canceled') await transition(tx, ctx, queueJobs, job, 'cancel');
    return { status: 'canceled' as const };
  });
}

export async function getQueueMetrics({ db, identity, query }: Context<'getQueueMetrics'>) {
  const { model } = queueOf(query.model);
  const counts = await db.prisma.queueJob.groupBy({
    by: ['status'],
    where: { projectId: identity.projectId, model, status: { in: ['pending', 'running'] } },
    _count: { _all: true },
  });
  const of = (s: string) => counts.find((c) => c.status === s)?._count._all ?? 0;
  return { messages_running: of('running'), messages_waiting: of('pending'), total_jobs: of('running') + of('pending') };
}

export async function clearQueue({ db, clock, identity, body }: Context<'clearQueue'>) {
  const { model } = queueOf(body.model);
  // Every pending job of the queue at once: one set-based statement with the table's move (and the stamps of queueJobs).
  const status = queueMachine.next('pending', 'cancel');
  const now = instant(clock);
  const { count } = await db.write((tx) =>
    tx.queueJob.updateMany({ where: { projectId: identity.projectId, model, status: 'pending' }, data: { status, doneAt: now, updatedAt: now } }),
  );
  return { canceled_count: count };
}

export async function claimQueueJobs({ db, clock, config, identity, body }: Context<'claimQueueJobs'>) {
  const { model } = queueOf(body.model);
  const timeoutMs = body.claim_timeout_seconds === undefined ? claimTimeoutMs(config) : Math.round(body.claim_timeout_seconds * 1000);
  const jobs = await claimJobs(db, clock, {
    projectId: identity.projectId,
    model,
    limit: body.max_jobs ?? 1,
    timeoutMs,
    workerId: body.worker_id ?? `key:${identity.apiKeyId}`,
  });
  return { object: 'list' as const, data: jobs.map(claimedJobWire) };
}

export async function heartbeatQueueJob({ db, clock, identity, body }: Context<'heartbeatQueueJob'>) {
  return queueJobWire(
    await db.write(async (tx) => heartbeatJob(tx, clock, await findJob(tx, identity.projectId, body.request_id, body.model), body.claim_token, body.info)),
  );
}

export async function completeQueueJob(ctx: Context<'completeQueueJob'>) {
  const { db, identity, body } = ctx;
  const finish = { event: 'complete' as const, outputs: body.outputs };
  // The common case, a running job completed by its claim, is one conditional UPDATE; anything else (a retry, a
  // lost claim, an absent job) is told apart by the full move.
  const done = await completeHeld(
    db,
    ctx,
    { projectId: identity.projectId, requestId: body.request_id, model: queueOf(body.model).model, token: body.claim_token },
    finish,
  );
  if (done) return queueJobWire(done);
  return queueJobWire(
    await db.write(async (tx) => finishJob(tx, ctx, await findJob(tx, identity.projectId, body.request_id, body.model), body.claim_token, finish)),
  );
}

export async function failQueueJob(ctx: Context<'failQueueJob'>) {
  const { db, identity, body } = ctx;
  const error = { message: body.error?.message ?? 'The worker failed the job.', code: body.error?.code ?? 'worker_failed' };
  return queueJobWire(
    await db.write(async (tx) =>
      finishJob(tx, ctx, await findJob(tx, identity.projectId, body.request_id, body.model), body.claim_token, { event: 'fail', error }),
    ),
  );
}
