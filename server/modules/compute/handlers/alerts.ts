// Module `compute`: passive health-check alerts, injected and resolved by the platform's control path. A WARNING or
// CRITICAL alert raises an AUTOMATED remediation awaiting approval (or joins the instance's open one); an INFO alert
// is only recorded. When every alert linked to a remediation has resolved before it runs, it auto-resolves.
import { randomUUID } from 'node:crypto';
import { instant } from '../../../core/clock.ts';
import { listPage } from '../../../http/list.ts';
import { owned } from '../../../http/scope.ts';
import type { Context } from '../../types.ts';
import { ALERT_LIST, ALERT_ORDER } from '../listing.ts';
import { autoResolveIfCleared, insertRemediation, OPEN_STATES } from '../machine.ts';
import { findCluster, findInstance } from '../rows.ts';
import { alertWire } from '../wire.ts';

export async function injectPassiveHealthCheckAlert(ctx: Context<'injectPassiveHealthCheckAlert'>) {
  const { db, clock, identity, params, body } = ctx;
  const alert = await db.write(async (tx) => {
    const instance = await findInstance(tx, identity.projectId, params.cluster_id, body.instance_id, 'instance_id');
    const vm = instance.vmId ? await tx.computeVm.findUnique({ where: { id: instance.vmId } }) : null;
    const now = instant(clock);
    const severity = body.severity ?? 'PHC_SEVERITY_CRITICAL';
    const alertId = randomUUID();
    let remediationId: string | null = null;
    if (severity !== 'PHC_SEVERITY_INFO') {
      const open = await tx.remediation.findFirst({
        where: { instanceId: instance.id, trigger: 'REMEDIATION_TRIGGER_AUTOMATED', state: { in: OPEN_STATES } },
        orderBy: { id: 'asc' },
      });
      if (open) remediationId = open.id;
      else {
        const r = await insertRemediation(tx, ctx, {
          instance,
          mode: body.remediation_mode ?? 'REMEDIATION_MODE_VM_ONLY',
          trigger: 'REMEDIATION_TRIGGER_AUTOMATED',
          state: 'PENDING_APPROVAL',
          reason: `Passive health check alert ${body.alert_name} fired on ${vm?.name ?? instance.name}.`,
          passiveHealthCheckEventId: alertId,
          requestedBy: 'system:passive-health-check',
        });
        remediationId = r.id;
      }
    }
    return tx.passiveHealthCheckAlert.create({
      data: {
        id: alertId,
        projectId: identity.projectId,
        clusterId: instance.clusterId,
        instanceId: instance.id,
        targetVm: vm?.name ?? '',
        alertName: body.alert_name,
        severity,
        annotations: JSON.stringify(body.annotations ?? {}),
        startedAt: now,
        remediationId,
      },
    });
  });
  return alertWire(alert);
}

export async function resolvePassiveHealthCheckAlert(ctx: Context<'resolvePassiveHealthCheckAlert'>) {
  const { db, clock, identity, params } = ctx;
  const alert = await db.write(async (tx) => {
    await findCluster(tx, identity.projectId, params.cluster_id);
    let a = await owned(
      tx.passiveHealthCheckAlert,
      identity.projectId,
      { id: params.alert_id, clusterId: params.cluster_id },
      {
        what: 'passive health check alert',
        id: params.alert_id,
        param: 'alert_id',
      },
    );
    if (a.resolvedAt === null) {
      a = await tx.passiveHealthCheckAlert.update({ where: { id: a.id }, data: { resolvedAt: instant(clock) } });
      if (a.remediationId) await autoResolveIfCleared(tx, ctx, a.remediationId);
    }
    return a;
  });
  return alertWire(alert);
}

export async function listPassiveHealthCheckAlerts({ db, identity, query }: Context<'listPassiveHealthCheckAlerts'>) {
  const severities = query.severity_filter === undefined ? [] : ([] as string[]).concat(query.severity_filter);
  const rows = await db.prisma.passiveHealthCheckAlert.findMany({
    where: {
      projectId: identity.projectId,
      ...(query.cluster_id ? { clusterId: query.cluster_id } : {}),
      ...(query.instance_id ? { instanceId: query.instance_id } : {}),
      ...(query.intent_id ? { remediationId: query.intent_id } : {}),
      ...(query.status === 'PHC_ALERT_STATUS_FIRING'
        ? { resolvedAt: null }
        : query.status === 'PHC_ALERT_STATUS_RESOLVED'
          ? { resolvedAt: { not: null } }
          : {}),
      ...(severities.length ? { severity: { in: severities } } : {}),
    },
  });
  const order = ALERT_ORDER[query.order_by ?? 'PHC_ALERT_ORDER_STARTED_AT_DESC'];
  const page = listPage(rows, { size: query.page_size, cursor: query.page_token, order }, ALERT_LIST);
  return { alerts: page.rows.map(alertWire), next_page_token: page.next };
}
