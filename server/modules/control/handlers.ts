// Module `control` (spec/tags/control.yaml): reset, the request journal and fault rules.
import { performance } from 'node:perf_hooks';
import { iso } from '../../core/clock.ts';
import type { Context } from '../types.ts';
import type { FaultRule } from './faults.ts';
import type { JournalEntry } from './journal.ts';
import { resetPlatform as resetAll, resetProject } from './reset.ts';

export async function resetPlatform(ctx: Context<'resetPlatform'>) {
  const started = performance.now();
  const projectId = ctx.body?.project_id;
  const deleted =
    projectId === undefined
      ? await resetAll(ctx.db, ctx.config.dataDir, ctx.control.reseed, ctx.control.forgetKey)
      : await resetProject(ctx.db, ctx.config.dataDir, projectId);
  if (projectId === undefined) {
    ctx.control.journal.clear();
    ctx.control.faults.clear();
    ctx.control.scripts.clear();
    await ctx.control.limits.clear();
  }
  return {
    scope: projectId === undefined ? ('platform' as const) : ('project' as const),
    project_id: projectId ?? null,
    deleted,
    ms: Math.round((performance.now() - started) * 10) / 10,
  };
}

const entryWire = (e: JournalEntry) => ({
  id: e.id,
  at: iso(e.at),
  method: e.method,
  path: e.path,
  operation: e.operation,
  project_id: e.projectId,
  status: e.status,
  ms: e.ms,
  request_body: e.requestBody,
  response_body: e.responseBody,
  fault: e.fault,
});

export async function listJournal({ query, control }: Context<'listJournal'>) {
  const data = control.journal.list({
    limit: query.limit ?? 100,
    operation: query.operation,
    path: query.path,
    status: query.status,
    projectId: query.project_id,
  });
  return { object: 'list' as const, data: data.map(entryWire) };
}

export async function clearJournal({ control }: Context<'clearJournal'>) {
  return { cleared: control.journal.clear() };
}

const faultWire = ({ createdAt, expiresAt, ...rule }: FaultRule) => ({
  ...rule,
  created_at: iso(createdAt),
  expires_at: expiresAt === null ? null : iso(expiresAt),
});

export async function listFaults({ control, clock }: Context<'listFaults'>) {
  return { object: 'list' as const, data: control.faults.list(clock.now()).map(faultWire) };
}

export async function createFault({ control, clock, body }: Context<'createFault'>) {
  return faultWire(control.faults.add(structuredClone(body), clock.now(), control.creating));
}

export async function deleteFault({ control, params }: Context<'deleteFault'>) {
  control.faults.remove(params.faultId);
  return { id: params.faultId, deleted: true as const };
}

export async function clearFaults({ control }: Context<'clearFaults'>) {
  return { cleared: control.faults.clear() };
}
