// A queue's backlog, as container deployments' autoscaler reads it (module containers): the jobs waiting or running.
import type { Db, Tx } from '../../db/index.ts';
import { queueOf } from './rules.ts';

/** The queue's name as its jobs are stored (a deprecated id is its model's current one); refuses what no queue can be named (400 naming `param`). */
export const queueName = (model: string, param: string) => queueOf(model, param).model;

/** The project's `pending` and `running` jobs of queue `model` (a stored queue name: `queueName`). */
export async function queueBacklog(db: Db | Tx, projectId: string, model: string): Promise<number> {
  return db.queueJob.count({ where: { projectId, model, status: { in: ['pending', 'running'] } } });
}
