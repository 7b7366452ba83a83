// Module `compute`: node remediations of a cluster's instances, moved by one machine (machine.ts). `remediation_id`
// on create is the client's idempotency key.
import type { Remediation } from '../../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../../core/clock.ts';
import type { Db, Tx } from '../../../db/index.ts';
import { idempotent } from '../../../http/idempotency.ts';
import { listPage } from '../../../http/list.ts';
import { transition } from '../../../runner/progress.ts';
import type { Context } from '../../types.ts';
import { REMEDIATION_LIST } from '../listing.ts';
import { insertRemediation, remediations } from '../machine.ts';
import { findInstance, findRemediation } from '../rows.ts';
import { remediationWire } from '../wire.ts';

async function remediationView(db: Db | Tx, r: Remediation, instanceName?: string) {
  const alerts = await db.passiveHealthCheckAlert.findMany({ where: { remediationId: r.id }, orderBy: [{ startedAt: 'asc' }, { id: 'asc' }] });
  const name = instanceName ?? (await db.computeInstance.findUnique({ where: { id: r.instanceId } }))?.name;
  return remediationWire(r, name, alerts);
}

export async function createRemediation(ctx: Context<'createRemediation'>) {
  const { db, clock, identity, params, query, body } = ctx;
  // An empty remediation_id is no key, as an absent one.
  const scope = { projectId: identity.projectId, operation: 'createRemediation', key: query.remediation_id || undefined, param: 'remediation_id' };
  const parameters = { cluster_id: params.cluster_id, instance_id: params.instance_id, mode: body.mode, reason: body.reason ?? null };
  return idempotent(db, clock, scope, parameters, async (tx) => {
    const instance = await findInstance(tx, identity.projectId, params.cluster_id, params.instance_id);
    const r = await insertRemediation(tx, ctx, {
      instance,
      mode: body.mode,
      trigger: 'REMEDIATION_TRIGGER_MANUAL',
      state: 'PENDING',
      reason: body.reason ?? null,
      requestedBy: identity.apiKeyId,
    });
    return remediationView(tx, r, instance.name);
  });
}

export async function listRemediations({ db, identity, params, query }: Context<'listRemediations'>) {
  const instance = await findInstance(db.prisma, identity.projectId, params.cluster_id, params.instance_id);
  const list = (v: unknown) => (v === undefined ? undefined : ([] as string[]).concat(v as string[]));
  // A state this server never enters (QUARANTINING, QUARANTINED) is a filter like any other: it matches nothing.
  const [states, triggers, modes] = [list(query.state), list(query.trigger), list(query.mode)];
  const rows = await db.prisma.remediation.findMany({
    where: {
      instanceId: instance.id,
      projectId: identity.projectId,
      ...(states?.length ? { state: { in: states } } : {}),
      ...(triggers?.length ? { trigger: { in: triggers } } : {}),
      ...(modes?.length ? { mode: { in: modes } } : {}),
    },
  });
  const page = listPage(rows, { size: query.page_size, cursor: query.page_token, order: query.order_by }, REMEDIATION_LIST);
  const alerts = await db.prisma.passiveHealthCheckAlert.findMany({
    where: { remediationId: { in: page.rows.map((r) => r.id) } },
    orderBy: [{ startedAt: 'asc' }, { id: 'asc' }],
  });
  return {
    remediations: page.rows.map((r) =>
      remediationWire(
        r,
        instance.name,
        alerts.filter((a) => a.remediationId === r.id),
      ),
    ),
    next_page_token: page.next,
    has_next: page.next !== '',
  };
}

export async function getRemediation({ db, identity, params }: Context<'getRemediation'>) {
  const { r, instance } = await findRemediation(db.prisma, identity.projectId, params);
  return remediationView(db.prisma, r, instance.name);
}

type ReviewContext = Context<'approveRemediation'> | Context<'rejectRemediation'> | Context<'cancelRemediation'>;

/** approve / reject / cancel: one transaction that re-reads the remediation and applies the machine. */
async function review(ctx: ReviewContext, event: 'approve' | 'reject' | 'cancel', extra: { comment?: string; mode?: string } = {}) {
  const { db, clock, identity } = ctx;
  return db.write(async (tx) => {
    const { r, instance } = await findRemediation(tx, identity.projectId, ctx.params);
    const reviewed = event === 'cancel' ? {} : { reviewedBy: identity.apiKeyId, reviewTime: instant(clock), reviewComment: extra.comment ?? null };
    const next = await transition(tx, ctx, remediations, r, event, { data: { ...reviewed, ...(extra.mode ? { mode: extra.mode } : {}) } });
    return remediationView(tx, next, instance.name);
  });
}

export async function approveRemediation(ctx: Context<'approveRemediation'>) {
  return review(ctx, 'approve', { comment: ctx.body?.comment, mode: ctx.body?.mode });
}

export async function rejectRemediation(ctx: Context<'rejectRemediation'>) {
  return review(ctx, 'reject', { comment: ctx.body?.comment });
}

export async function cancelRemediation(ctx: Context<'cancelRemediation'>) {
  return review(ctx, 'cancel');
}
