// The queue's runner work: the built-in worker of chat models' queues (one work item per job entering `pending`:
// it claims the queue's next job by priority, runs it through the chat engine and completes it), and the claim
// timeout's check. The built-in worker claims like any other worker, so its jobs time out and return to the queue
// the same way when its process dies mid-job.
import { setTimeout as sleep } from 'node:timers/promises';
import { duration } from '../../core/config.ts';
import { ApiError } from '../../core/errors.ts';
import { localChat } from '../../engines/chat.ts';
import type { WorkHandler } from '../../runner/runner.ts';
import type { Services } from '../types.ts';
import { type ClaimCheck, claimJobs, claimTimeoutMs, expireClaims, type Finish, finishHeld, heartbeatJob, heldByClaim } from './machine.ts';
import { builtInModel, chatRequestOf } from './rules.ts';

export const hasBuiltIn = async (tx: Parameters<typeof builtInModel>[0], projectId: string, model: string) =>
  (await builtInModel(tx, projectId, model)) !== null;

export function builtInWorker(services: Services): WorkHandler {
  const { db, clock, config, log } = services;
  return {
    run: async (item) => {
      const timeoutMs = claimTimeoutMs(config);
      const [job] = await claimJobs(db, clock, {
        projectId: item.projectId!,
        model: item.payload.model,
        limit: 1,
        timeoutMs,
        workerId: `built-in:${services.runner.owner}`,
      });
      if (!job) return {};
      const token = job.claimToken!;
      // Status updates while the job runs, so a live worker's claim never times out.
      const beat = setInterval(
        () => void db.write(async (tx) => heartbeatJob(tx, clock, await tx.queueJob.findUniqueOrThrow({ where: { id: job.id } }), token)).catch(() => {}),
        Math.max(20, timeoutMs / 3),
      );
      let outcome: Finish;
      try {
        const workMs = duration(config, 'queue_work', 0);
        if (workMs > 0) await sleep(workMs);
        const request = chatRequestOf(job.model, JSON.parse(job.inputs));
        const answer = await localChat(job.model, request);
        outcome = {
          event: 'complete',
          outputs: {
            choices: answer.choices.map((c: { index: number; message: { content: string | null }; finish_reason: string }) => ({
              index: c.index,
              text: c.message.content ?? '',
              finish_reason: c.finish_reason,
            })),
            usage: answer.usage,
            system_fingerprint: answer.system_fingerprint,
          },
        };
      } catch (err) {
        // The engine refused the job (or failed): an explicit failure, which is not retried.
        const message = err instanceof Error ? err.message : String(err);
        outcome = { event: 'fail', error: { message, code: err instanceof ApiError && err.code ? err.code : 'engine_error' } };
      } finally {
        clearInterval(beat);
      }
      // null: the claim timed out meanwhile: the job is back in the queue (or finished by another), not ours to finish.
      if (!(await finishHeld(db, services, job, token, outcome))) log.warn({ job: job.id }, 'built-in queue worker lost its claim');
      return {};
    },
  };
}

/** The claim timeout's check: expires what has run out, and checks again when the next timeout would. */
export function claimTimeoutCheck(services: Services): WorkHandler {
  const { db, clock } = services;
  return {
    run: async (item) => {
      const check = item.payload as ClaimCheck;
      const { expired, nextInMs } = await heldByClaim(db, clock, check);
      return {
        apply: async (tx) => void (expired.length && (await expireClaims(tx, services, expired, hasBuiltIn))),
        ...(nextInMs !== undefined && { againInMs: nextInMs }),
      };
    },
  };
}
