// Module `queue` (spec/tags/queue.yaml): queue jobs per model (machine.ts), worked by the built-in chat workers on
// the durable runner (worker.ts) or by the caller's own workers through the worker API (handlers.ts).
import type { ModuleDescriptor } from '../types.ts';
import {
  cancelQueueJob,
  claimQueueJobs,
  clearQueue,
  completeQueueJob,
  failQueueJob,
  getQueueJobStatus,
  getQueueMetrics,
  heartbeatQueueJob,
  submitQueueJob,
} from './handlers.ts';
import { queueMachine, steerQueueJobs, WORK_KIND } from './machine.ts';
import { queueJobsSection } from './submit.ts';
import { builtInWorker, claimTimeoutCheck } from './worker.ts';

export { queueBacklog, queueName } from './backlog.ts';

export const queue: ModuleDescriptor<'queue'> = {
  name: 'queue',
  handlers: {
    submitQueueJob,
    getQueueJobStatus,
    cancelQueueJob,
    getQueueMetrics,
    clearQueue,
    claimQueueJobs,
    heartbeatQueueJob,
    completeQueueJob,
    failQueueJob,
  },
  machines: [queueMachine],
  work: (services) => ({ [WORK_KIND]: builtInWorker(services), [queueMachine.kind]: claimTimeoutCheck(services) }),
  // Only a worker claims a job (the claim hands out its token); its timed step is the claim's timeout check.
  steer: (services) => ({ queue_job: { progression: steerQueueJobs(services), creates: [], callerOnly: ['claim'], untimed: true } }),
  fixtureSections: { queue_jobs: queueJobsSection },
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
