// Module `batches`: create, list, get, cancel. The runner does the rest (machine.ts).
import { pageSize } from '../../http/list.ts';
import { owned } from '../../http/scope.ts';
import type { Context } from '../types.ts';
import { createBatchJob } from './create.ts';
import { end } from './machine.ts';
import { batchWire } from './wire.ts';

const find = (ctx: Context<'getBatch'> | Context<'cancelBatch'>) =>
  owned(ctx.db.prisma.batch, ctx.identity.projectId, { id: ctx.params.id }, { what: 'batch', id: ctx.params.id, param: 'id' });

export async function createBatch(ctx: Context<'createBatch'>) {
  const { job, warning } = await createBatchJob(ctx);
  return { job: batchWire(job), ...(warning !== undefined && { warning }) };
}

export async function listBatches(ctx: Context<'listBatches'>) {
  const rows = await ctx.db.prisma.batch.findMany({
    where: { projectId: ctx.identity.projectId },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: pageSize(ctx.query.limit, 'limit', 100),
  });
  return rows.map(batchWire);
}

export async function getBatch(ctx: Context<'getBatch'>) {
  return batchWire(await find(ctx));
}

export async function cancelBatch(ctx: Context<'cancelBatch'>) {
  const row = await find(ctx);
  const moved = await ctx.db.write(async (tx) =>
    end(tx, ctx, row, 'cancel', {
      data: { error: `Cancelled by the caller: ${row.linesDone} of ${row.totalLines} requests were done; their results are in its files.` },
    }),
  );
  return batchWire(moved);
}
