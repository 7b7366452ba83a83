// The rules of traffic and replicas on v2 endpoints. An endpoint's traffic split lists deployments with relative
// weights; a request goes to a READY deployment with a positive weight, chosen by weight (a request for a LoRA
// adapter, only among those that serve it). A deployment provisions its minimum replicas, at least one, and the
// autoscaler moves them with the traffic it serves (autoscaling.ts); 0/0 is stopped. Every deployment runs on the local chat engine.
import type { DedicatedEndpoint, Deployment, Model } from '../../../generated/prisma/sqlite/client/client.ts';
import { type Clock, instant } from '../../core/clock.ts';
import { conflict } from '../../core/errors.ts';
import type { Db, Tx } from '../../db/index.ts';
import { textRuntime } from '../../engines/chat.ts';
import type { EngineRoutes } from '../../engines/routes.ts';
import { newEtag } from '../../http/etag.ts';
import { fitsEndpoint } from '../adapters/index.ts';
import { recordEndpointChange } from './events.ts';
import { desiredReplicas } from './machine.ts';

export interface SplitEntry {
  deploymentId: string;
  weight: number;
}

export const READY = 'DEPLOYMENT_STATE_READY';

/** The runner's work kind of the autoscaler's ticks (autoscaling.ts). */
export const AUTOSCALER_KIND = 'deployment_autoscaler';

/** A deployment the autoscaler scaled to zero: STOPPED although its bounds let it run (a caller stops with 0/0). */
export const scaledToZero = (d: Deployment) => d.state === 'DEPLOYMENT_STATE_STOPPED' && d.maxReplicas > 0;

/** Scaled to zero, or on its way there (STOPPING with bounds that let it run): a request wakes it (once STOPPED). */
const asleepOrFalling = (d: Deployment) => scaledToZero(d) || (d.state === 'DEPLOYMENT_STATE_STOPPING' && d.maxReplicas > 0);

/** A request reached the endpoint while these deployments were scaled to zero: their autoscaler's next tick wakes them, now. */
async function requestWake(tx: Tx, ids: string[]): Promise<void> {
  for (const deploymentId of ids) {
    await tx.autoscalerState.upsert({ where: { deploymentId }, create: { deploymentId, wakeRequested: true }, update: { wakeRequested: true } });
  }
  // Due at once (a runAt in the past; routing has no clock at hand): the tick is what wakes it.
  await tx.workItem.updateMany({ where: { kind: AUTOSCALER_KIND, subjectId: { in: ids }, state: 'queued' }, data: { runAt: 0n } });
}

export const splitOf = (e: DedicatedEndpoint): SplitEntry[] => JSON.parse(e.trafficSplit);

/** The engine a deployment's chat runs on, as the engine routes (ENGINES) pick it for its model. */
export const runtimeOf = (d: Deployment, engines: EngineRoutes) => textRuntime(engines.routeFor('chat', d.modelId));

/** Who a deployment is shown to: the slug its inference name carries, and the engine routes its runtime comes from. */
export interface Viewer {
  identity: { projectSlug: string };
  engines: EngineRoutes;
}

/**
 * Which of `deployments` serve an adapter: those it is bound to (a binding was checked to fit when made), and those
 * with LoRA enabled whose model it fits (the tag's **LoRA** and **Bound adapters**).
 */
export async function adapterServers(db: Db | Tx, deployments: Deployment[], adapter: Model): Promise<(d: Deployment) => boolean> {
  const ids = deployments.map((d) => d.id);
  const bound = new Set(
    (await db.deploymentAdapter.findMany({ where: { adapterModelId: adapter.id, deploymentId: { in: ids } }, select: { deploymentId: true } })).map(
      (b) => b.deploymentId,
    ),
  );
  const models = await db.model.findMany({ where: { id: { in: deployments.map((d) => d.modelId) } }, select: { id: true, architecture: true } });
  const architectures = new Map(models.map((m) => [m.id, m.architecture]));
  return (d) => bound.has(d.id) || (d.enableLora && fitsEndpoint(adapter, { modelId: d.modelId, architecture: architectures.get(d.modelId) ?? null }));
}

/** Whether a deployment holds (or is getting) replicas. */
export const isRunning = (d: Deployment) => !['DEPLOYMENT_STATE_STOPPED', 'DEPLOYMENT_STATE_FAILED'].includes(d.state);

/** The replicas a deployment is meant to run now: READY, what the autoscaler sized it to; before, what it provisions. */
export const targetReplicas = (d: Deployment) => (d.state === READY ? d.readyReplicas : isRunning(d) ? desiredReplicas(d) : 0);

/** Each deployment's share of the endpoint's traffic now: READY deployments with a positive weight, by weight. */
export function trafficShares(e: DedicatedEndpoint, deployments: Deployment[]): Map<string, number> {
  const ready = new Set(deployments.filter((d) => d.state === READY).map((d) => d.id));
  const eligible = splitOf(e).filter((s) => s.weight > 0 && ready.has(s.deploymentId));
  const total = eligible.reduce((sum, s) => sum + s.weight, 0);
  return new Map(eligible.map((s) => [s.deploymentId, s.weight / total]));
}

const GOLDEN = (Math.sqrt(5) - 1) / 2;

/**
 * Picks the deployment that serves request number `k` of an endpoint: the one whose cumulative share contains
 * frac(k * golden ratio). Deterministic, and any run of requests follows the weights closely (a low-discrepancy
 * sequence).
 */
export function pickByWeight(entries: SplitEntry[], k: number): string {
  const total = entries.reduce((s, e) => s + e.weight, 0);
  const u = ((k * GOLDEN) % 1) * total;
  let acc = 0;
  for (const e of entries) {
    acc += e.weight;
    if (u < acc) return e.deploymentId;
  }
  return entries[entries.length - 1]!.deploymentId;
}

/**
 * Routes one request to a READY, routed deployment of the endpoint that `accepts` (counting it), or null when
 * none is. Routed deployments that the autoscaler scaled to zero are woken by the request.
 */
export async function routeRequest(tx: Tx, endpoint: DedicatedEndpoint, accepts: (d: Deployment) => boolean = () => true): Promise<Deployment | null> {
  const deployments = await tx.deployment.findMany({ where: { endpointId: endpoint.id }, orderBy: { id: 'asc' } });
  const routed = new Set(
    splitOf(endpoint)
      .filter((s) => s.weight > 0)
      .map((s) => s.deploymentId),
  );
  const asleep = deployments.filter((d) => asleepOrFalling(d) && routed.has(d.id) && accepts(d)).map((d) => d.id);
  if (asleep.length) await requestWake(tx, asleep);
  const ready = new Map(deployments.filter((d) => d.state === READY && accepts(d)).map((d) => [d.id, d]));
  const eligible = splitOf(endpoint).filter((s) => s.weight > 0 && ready.has(s.deploymentId));
  if (eligible.length === 0) return null;
  const { routedCount } = await tx.dedicatedEndpoint.update({ where: { id: endpoint.id }, data: { routedCount: { increment: 1 } } });
  return ready.get(pickByWeight(eligible, routedCount))!;
}

/** Who steers an endpoint's traffic split besides its caller: a rollout or an A/B experiment (`<kind>:<id>`). */
export type TrafficOwner = `rollout:${string}` | `abExperiment:${string}`;

const ownerName = (owner: string) => {
  const [kind, id] = owner.split(':');
  return `${kind === 'rollout' ? 'rollout' : 'A/B experiment'} '${id}'`;
};

/** The one refusal of a change to a split someone else steers (a caller's PATCH, another rollout or experiment). */
export const trafficSteered = (e: DedicatedEndpoint, param: string | null = 'trafficSplit') =>
  conflict(
    `Endpoint '${e.name}''s traffic split is steered by ${ownerName(e.trafficOwner!)}: finish, cancel or delete it first.`,
    'traffic_split_steered',
    param,
  );

/**
 * Sets an endpoint's split on behalf of `owner`, taking the split if nobody steers it (409 `traffic_split_steered`
 * when another does), and records the change in the endpoint's events. `release` hands the split back to the caller.
 */
export async function steerTraffic(
  tx: Tx,
  clock: Clock,
  endpointId: string,
  owner: TrafficOwner,
  split: SplitEntry[] | null,
  options: { release?: boolean; param?: string | null } = {},
): Promise<DedicatedEndpoint> {
  const e = await tx.dedicatedEndpoint.findUniqueOrThrow({ where: { id: endpointId } });
  if (e.trafficOwner && e.trafficOwner !== owner) throw trafficSteered(e, options.param ?? null);
  const next = await tx.dedicatedEndpoint.update({
    where: { id: e.id },
    data: {
      trafficSplit: split ? JSON.stringify(split) : e.trafficSplit,
      trafficOwner: options.release ? null : owner,
      etag: newEtag(),
      updatedAt: instant(clock),
    },
  });
  await recordEndpointChange(tx, clock, e, next);
  return next;
}
