// Module `control` (spec/tags/control.yaml): reset, the request journal and fault rules. Each change is made through
// the control plane's shared state (shared.ts), so it holds in every process when it answers.
import { performance } from 'node:perf_hooks';
import { iso } from '../../core/clock.ts';
import type { Context } from '../types.ts';
import { checkFault, type FaultRule, newFault, spentFault } from './faults.ts';
import type { JournalEntry } from './journal.ts';
import { Journal } from './journal.ts';
import type { ControlPlane } from './plane.ts';
import { resetPlatform as resetAll, resetProject } from './reset.ts';
import { timesWire } from './rules.ts';

export async function resetPlatform(ctx: Context<'resetPlatform'>, plane: ControlPlane) {
  const started = performance.now();
  const projectId = ctx.body?.project_id;
  const deleted = projectId === undefined ? await resetAll(plane) : await resetProject(ctx.db, ctx.config.dataDir, projectId);
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
  ignored_fields: e.ignoredFields,
});

export async function listJournal({ query }: Context<'listJournal'>, plane: ControlPlane) {
  // Every process writes down what it holds first, so the read holds every request finished before it.
  await plane.gatherJournal();
  const data = await plane.journal.list({
    limit: query.limit ?? 100,
    operation: query.operation,
    path: query.path,
    status: query.status,
    projectId: query.project_id,
  });
  return { object: 'list' as const, data: data.map(entryWire) };
}

export async function clearJournal(_ctx: Context<'clearJournal'>, plane: ControlPlane) {
  await plane.gatherJournal();
  return { cleared: await plane.change((tx) => Journal.clear(tx), ['journal']) };
}

// The counts a rule has left, as the wire gives them.
const faultWire = (r: FaultRule) => {
  const { count, after, ...input } = r.input;
  return {
    ...input,
    ...(count === undefined ? {} : { count: count - r.hits }),
    ...(after === undefined ? {} : { after: Math.max(0, after - r.skipped) }),
    id: r.id,
    hits: r.hits,
    ...timesWire(r),
  };
};

export async function listFaults({ clock }: Context<'listFaults'>, plane: ControlPlane) {
  return { object: 'list' as const, data: (await plane.faults.store.list(clock.now(), spentFault)).map(faultWire) };
}

export async function createFault({ clock, body }: Context<'createFault'>, plane: ControlPlane) {
  const input = structuredClone(body);
  checkFault(input, plane.creating);
  const rule = newFault(input, clock.now());
  await plane.change((tx) => plane.faults.store.insert(tx, rule));
  return faultWire(rule);
}

export async function deleteFault({ params }: Context<'deleteFault'>, plane: ControlPlane) {
  await plane.change((tx) => plane.faults.store.remove(tx, params.faultId));
  return { id: params.faultId, deleted: true as const };
}

export async function clearFaults({ clock }: Context<'clearFaults'>, plane: ControlPlane) {
  return { cleared: await plane.change((tx) => plane.faults.store.clear(tx, clock.now())) };
}
