// The metric-based autoscaler of v2 deployments (the tag's **Autoscaling**). One chain of runner items per deployment
// that autoscales (it has scaling metrics, or may scale to zero): every tick observes what the deployment served in
// the last minute (ServedRequest rows, served.ts), recommends a replica count per metric, and resizes the READY
// deployment once the need held for its window, or scales it to zero after its idle window. Each tick runs in one
// transaction holding the deployment's row lock and schedules the next tick in it, so a process killed mid-tick
// loses nothing (the runner retries the item) and two processes never act on one deployment at once.
import type { Deployment } from '../../../generated/prisma/sqlite/client/client.ts';
import { instant } from '../../core/clock.ts';
import { duration } from '../../core/config.ts';
import { badRequest } from '../../core/errors.ts';
import type { Database, Db, Tx } from '../../db/index.ts';
import { newEtag } from '../../http/etag.ts';
import { type Timing, transitionIfStill } from '../../runner/progress.ts';
import { enqueue, type WorkHandler } from '../../runner/runner.ts';
import { release, reserveIfFree } from '../hardware/index.ts';
import { recordDeploymentChange } from './events.ts';
import { deploymentMachine, deployments } from './machine.ts';
import { DEPLOYMENT_OWNER } from './placement.ts';
import { figures } from './served.ts';
import { AUTOSCALER_KIND, READY, scaledToZero } from './traffic.ts';

/** How often a tick runs (env `DURATION_AUTOSCALER_TICK_MS`), and the span of traffic each tick observes. */
export const TICK_MS = 15_000;
export const OBSERVE_MS = 60_000;
const tickMs = (timing: Timing) => duration(timing.config, 'autoscaler_tick', TICK_MS);
/** Windows a policy leaves out. */
export const DEFAULT_WINDOWS_MS = { scaleUpWindow: 0, scaleDownWindow: 300_000, scaleToZeroWindow: 300_000 } as const;

/** The metrics measured here, from the requests served in the last OBSERVE_MS. */
export const METRICS = ['inflight_requests', 'throughput_per_replica', 'e2e_latency'] as const;
type MetricName = (typeof METRICS)[number];
const PERCENTILES = ['p50', 'p90', 'p95', 'p99'] as const;

export interface ScalingMetric {
  name: string;
  type: string;
  target: number;
  percentile?: string;
}

/** A window such as `"300s"` in ms (the contract's pattern allows a sign and a fraction). */
const windowMs = (w: string) => Math.round(Number.parseFloat(w.slice(0, -1)) * 1000);

/** The policy's rules (400 naming the field): windows not negative, metrics this server measures, with a positive target. */
export function checkPolicy(a: { scaleDownWindow?: string; scaleUpWindow?: string; scaleToZeroWindow?: string; scalingMetrics?: ScalingMetric[] }) {
  for (const w of ['scaleUpWindow', 'scaleDownWindow', 'scaleToZeroWindow'] as const) {
    const v = a[w];
    if (v !== undefined && windowMs(v) < 0) throw badRequest(`'${w}' must not be negative.`, `autoscaling.${w}`, 'invalid_autoscaling');
  }
  for (const [i, m] of (a.scalingMetrics ?? []).entries()) {
    const at = `autoscaling.scalingMetrics.${i}`;
    if (!(METRICS as readonly string[]).includes(m.name)) {
      throw badRequest(`Metric '${m.name}' is not measured here; the autoscaler follows ${METRICS.join(', ')}.`, `${at}.name`, 'unsupported_metric');
    }
    if (m.type === 'METRIC_TARGET_TYPE_UTILIZATION') {
      throw badRequest(`'${m.name}' has no capacity to take a percentage of: give a VALUE or AVERAGE_VALUE target.`, `${at}.type`, 'unsupported_metric_type');
    }
    if (!(m.target > 0)) throw badRequest("A metric's 'target' must be positive.", `${at}.target`, 'invalid_autoscaling');
    if (m.percentile !== undefined && (m.name !== 'e2e_latency' || !(PERCENTILES as readonly string[]).includes(m.percentile))) {
      throw badRequest(`'percentile' is one of ${PERCENTILES.join(', ')}, for e2e_latency only.`, `${at}.percentile`, 'invalid_autoscaling');
    }
  }
}

export const metricsOf = (d: Deployment): ScalingMetric[] => (d.scalingMetrics ? JSON.parse(d.scalingMetrics) : []);

/** Whether the autoscaler acts on a deployment: it may run, and it has metrics to follow or may scale to zero. */
export const autoscales = (d: Deployment) => d.maxReplicas > 0 && (metricsOf(d).length > 0 || d.minReplicas === 0);

/** Starts the deployment's chain of ticks unless one is under way (call it after writing the deployment's row, which it locks). */
export async function ensureAutoscaler(tx: Tx, timing: Timing, d: Deployment): Promise<void> {
  if (!autoscales(d)) return;
  const live = await tx.workItem.findFirst({ where: { kind: AUTOSCALER_KIND, subjectId: d.id, state: { in: ['queued', 'running'] } } });
  if (!live) await enqueue(tx, timing.clock, { kind: AUTOSCALER_KIND, subjectId: d.id, projectId: d.projectId, delayMs: tickMs(timing) });
}

/** What each metric recommends (replicas), from the served rows of the last OBSERVE_MS; null when it has nothing to go on. */
export function recommend(
  metric: ScalingMetric,
  rows: { latencyMs: number; status: number; promptTokens: number; completionTokens: number }[],
  current: number,
) {
  const name = metric.name as MetricName;
  if (name === 'inflight_requests') {
    // Little's law: requests in flight on average = the time spent serving them / the time observed.
    const inflight = rows.reduce((s, r) => s + r.latencyMs, 0) / OBSERVE_MS;
    return { value: inflight, replicas: Math.ceil(inflight / metric.target - 1e-9) };
  }
  if (name === 'throughput_per_replica') {
    const perSecond = rows.length / (OBSERVE_MS / 1000);
    return { value: perSecond, replicas: Math.ceil(perSecond / metric.target - 1e-9) };
  }
  if (rows.length === 0) return null;
  const f = figures(rows).latencyMs;
  const latency = f[(metric.percentile ?? 'p95') as keyof typeof f];
  // A latency is held at its target by scaling the replicas in proportion (as a Kubernetes HPA's Value target).
  return { value: latency, replicas: Math.ceil(current * (latency / metric.target) - 1e-9) };
}

const clamp = (n: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, n));
const windowOf = (d: Deployment, w: keyof typeof DEFAULT_WINDOWS_MS) => (d[w] !== null ? windowMs(d[w]!) : DEFAULT_WINDOWS_MS[w]);

/** Resizes a READY deployment in place: growing takes as many of the wanted replicas as its hardware has free. */
async function resize(tx: Tx, timing: Timing, d: Deployment, wanted: number, why: string): Promise<void> {
  let replicas = wanted;
  if (wanted > d.readyReplicas) {
    const place = (n: number) =>
      reserveIfFree(tx, timing.clock, { projectId: d.projectId, hardwareId: d.hardwareId!, replicas: n, ownerKind: DEPLOYMENT_OWNER, ownerId: d.id });
    while (replicas > d.readyReplicas && !(await place(replicas - d.readyReplicas))) replicas--;
    if (replicas === d.readyReplicas) return;
  } else {
    await release(tx, timing.clock, DEPLOYMENT_OWNER, d.id, d.readyReplicas - replicas);
  }
  const next = await tx.deployment.update({
    where: { id: d.id },
    data: { readyReplicas: replicas, message: `${replicas} replica(s) ready on ${d.hardwareId} (${why}).`, etag: newEtag(), updatedAt: instant(timing.clock) },
  });
  await recordDeploymentChange(tx, timing.clock, 'runner', d, next);
}

/** One tick for one deployment, in the runner's fenced transaction. */
async function tick(tx: Tx, timing: Timing, item: { id: string; subjectId: string }): Promise<void> {
  // The row lock first (a no-op update): a caller's change and this tick see each other whole.
  const { count } = await tx.deployment.updateMany({ where: { id: item.subjectId }, data: { epoch: { increment: 0 } } });
  const d = count ? await tx.deployment.findUnique({ where: { id: item.subjectId } }) : null;
  if (!d || !autoscales(d)) return; // the chain ends; a change that makes it autoscale starts another
  const other = await tx.workItem.findFirst({
    where: { kind: AUTOSCALER_KIND, subjectId: d.id, state: { in: ['queued', 'running'] }, id: { lt: item.id } },
  });
  if (other) return; // two chains (two processes started one at once): the older one goes on
  await enqueue(tx, timing.clock, { kind: AUTOSCALER_KIND, subjectId: d.id, projectId: d.projectId, delayMs: tickMs(timing) });

  const now = timing.clock.now();
  const state = (await tx.autoscalerState.findUnique({ where: { deploymentId: d.id } })) ?? {
    upSince: null,
    upTo: null,
    downSince: null,
    downTo: null,
    readyAt: null,
    wakeRequested: false,
  };
  const save = (data: Record<string, unknown>) =>
    tx.autoscalerState.upsert({ where: { deploymentId: d.id }, create: { deploymentId: d.id, ...data }, update: data });

  if (scaledToZero(d)) {
    if (!state.wakeRequested) return;
    await save({ wakeRequested: false, upSince: null, upTo: null, downSince: null, downTo: null, readyAt: null });
    const next = await transitionIfStill(tx, timing, deployments, d, 'start', {
      data: { hardwareId: null, readyReplicas: 0, message: 'Waking from zero replicas for a request: provisioning.' },
    });
    if (next) await recordDeploymentChange(tx, timing.clock, 'runner', d, next);
    return;
  }
  if (d.state !== READY) {
    if (state.readyAt !== null) await save({ readyAt: null, upSince: null, upTo: null, downSince: null, downTo: null });
    return;
  }
  const readyAt = state.readyAt !== null ? Number(state.readyAt) : now;

  // Scale to zero: no request (of any role) for scaleToZeroWindow since it became READY.
  if (d.minReplicas === 0) {
    const last = await tx.servedRequest.findFirst({ where: { deploymentId: d.id }, orderBy: { createdAt: 'desc' }, select: { createdAt: true } });
    const idleSince = Math.max(readyAt, last ? Number(last.createdAt) : 0);
    const idleWindow = windowOf(d, 'scaleToZeroWindow');
    if (now - idleSince >= idleWindow) {
      await save({ readyAt: null, upSince: null, upTo: null, downSince: null, downTo: null, wakeRequested: false });
      const next = await transitionIfStill(tx, timing, deployments, d, 'stop', {
        data: { message: `Scaling to zero: no requests for ${idleWindow / 1000}s.` },
      });
      if (next) await recordDeploymentChange(tx, timing.clock, 'runner', d, next);
      return;
    }
  }

  // Recommendations: the most any metric asks for, within the bounds (at least one replica while running).
  const rows = await tx.servedRequest.findMany({
    where: { deploymentId: d.id, createdAt: { gte: BigInt(now - OBSERVE_MS), lt: BigInt(now + 1) } },
    select: { latencyMs: true, status: true, promptTokens: true, completionTokens: true },
  });
  const current = d.readyReplicas;
  const asks = metricsOf(d)
    .map((m) => ({ m, r: recommend(m, rows, current) }))
    .filter((x) => x.r !== null);
  const desired = asks.length ? clamp(Math.max(...asks.map((x) => x.r!.replicas)), Math.max(d.minReplicas, 1), d.maxReplicas) : current;
  const top = asks.sort((a, b) => b.r!.replicas - a.r!.replicas)[0];
  const why = top ? `${top.m.name} ${Number(top.r!.value.toFixed(3))} for a target of ${top.m.target}` : 'no metric';

  const up = desired > current ? { since: Number(state.upSince ?? now), to: Math.min(desired, state.upTo ?? desired) } : null;
  const down = desired < current ? { since: Number(state.downSince ?? now), to: Math.max(desired, state.downTo ?? desired) } : null;
  if (up && now - up.since >= windowOf(d, 'scaleUpWindow')) {
    await save({ readyAt: BigInt(readyAt), upSince: null, upTo: null, downSince: null, downTo: null });
    return resize(tx, timing, d, up.to, `scaled up: ${why}`);
  }
  if (down && now - down.since >= windowOf(d, 'scaleDownWindow')) {
    await save({ readyAt: BigInt(readyAt), upSince: null, upTo: null, downSince: null, downTo: null });
    return resize(tx, timing, d, down.to, `scaled down: ${why}`);
  }
  await save({
    readyAt: BigInt(readyAt),
    upSince: up ? BigInt(up.since) : null,
    upTo: up?.to ?? null,
    downSince: down ? BigInt(down.since) : null,
    downTo: down?.to ?? null,
  });
}

export function autoscalerWork(services: Timing & { db: Database }): WorkHandler {
  return { run: async (item) => ({ apply: (tx) => tick(tx, services, item) }) };
}

/**
 * When the first of an endpoint's routed deployments that is on its way to READY will be there, for a request no
 * READY one could serve: a deployment PROVISIONING at its provisioning step's due time; one scaled to zero (which the
 * request woke: its autoscaler's tick starts it at once) after a whole provisioning; one still STOPPING towards zero
 * after its stop, the next tick and a provisioning. Null when none is on its way (stopped for good, failed).
 */
export async function readyEstimate(db: Db | Tx, timing: Timing, starting: Deployment[]): Promise<{ inMs: number; waking: boolean } | null> {
  const now = timing.clock.now();
  const provisionMs = deploymentMachine.delayMs('DEPLOYMENT_STATE_PROVISIONING', timing.config) ?? 0;
  const dueOf = async (d: Deployment) => {
    const item = await db.workItem.findFirst({ where: { kind: deploymentMachine.kind, subjectId: d.id, state: 'queued' }, orderBy: { runAt: 'asc' } });
    return item ? Number(item.runAt) : now;
  };
  let best: { at: number; waking: boolean } | null = null;
  for (const d of starting) {
    const falling = d.state === 'DEPLOYMENT_STATE_STOPPING' && d.maxReplicas > 0;
    const at =
      d.state === 'DEPLOYMENT_STATE_PROVISIONING'
        ? await dueOf(d)
        : scaledToZero(d)
          ? now + provisionMs
          : falling
            ? (await dueOf(d)) + tickMs(timing) + provisionMs
            : null;
    if (at !== null && (best === null || at < best.at)) best = { at, waking: scaledToZero(d) || falling };
  }
  return best && { inMs: Math.max(0, best.at - now), waking: best.waking };
}
