// Writing v2 endpoints and deployments, and reading them back whole (with their siblings and mounted volumes) for
// the wire.
import type { components } from '../../../generated/api.d.ts';
import type { DedicatedEndpoint, Deployment, Model, ModelConfig } from '../../../generated/prisma/sqlite/client/client.ts';
import { type Clock, instant } from '../../core/clock.ts';
import { newId } from '../../core/ids.ts';
import type { Db, Tx } from '../../db/index.ts';
import { newEtag } from '../../http/etag.ts';
import { enter, type Timing } from '../../runner/progress.ts';
import { release } from '../hardware/index.ts';
import { attachVolumes, detachVolumes } from '../volumes/index.ts';
import { checkPolicy, ensureAutoscaler, type ScalingMetric } from './autoscaling.ts';
import { recordDeploymentChange, recordEndpointChange } from './events.ts';
import { deploymentMachine, desiredReplicas } from './machine.ts';
import { checkPlacement, DEPLOYMENT_OWNER } from './placement.ts';
import { checkAutoscaling, checkName, checkNameFree, createBounds, deploymentNameTaken, deploymentsOf, resolveModelAndConfig } from './refs.ts';
import { startRetention } from './served.ts';
import type { Viewer } from './traffic.ts';
import { deploymentWire, v2EndpointWire } from './wire.ts';

export async function createEndpointRow(
  tx: Tx,
  clock: Clock,
  projectId: string,
  name: string,
  visibility: string,
  param: string,
  id?: string,
): Promise<DedicatedEndpoint> {
  await checkNameFree(tx, projectId, name, param);
  const now = instant(clock);
  const e = await tx.dedicatedEndpoint.create({
    data: { id: id ?? newId('ep', clock.now()), projectId, name, visibility, etag: newEtag(), createdAt: now, updatedAt: now },
  });
  await recordEndpointChange(tx, clock, null, e);
  await startRetention(tx, clock, e);
  return e;
}

/** The autoscaler's policy as a create or update gives it (windows and metrics; the bounds are columns of their own). */
export interface AutoscalingPolicy {
  scaleDownWindow?: string;
  scaleUpWindow?: string;
  scaleToZeroWindow?: string;
  scalingMetrics?: ScalingMetric[];
}

/** The policy's columns: each given window or metric list replaces the current one, an omitted one keeps it. */
export function policyColumns(a: AutoscalingPolicy, current?: Deployment) {
  return {
    scaleDownWindow: a.scaleDownWindow ?? current?.scaleDownWindow ?? null,
    scaleUpWindow: a.scaleUpWindow ?? current?.scaleUpWindow ?? null,
    scaleToZeroWindow: a.scaleToZeroWindow ?? current?.scaleToZeroWindow ?? null,
    scalingMetrics: a.scalingMetrics !== undefined ? JSON.stringify(a.scalingMetrics) : (current?.scalingMetrics ?? null),
  };
}

export interface NewDeployment {
  /** A fixture's given id; made as the API makes it otherwise. */
  id?: string;
  projectId: string;
  endpointId: string;
  name: string;
  model: Model;
  modelRevisionId: string;
  config: ModelConfig;
  minReplicas: number;
  maxReplicas: number;
  policy?: AutoscalingPolicy;
  enableLora?: boolean;
  placement?: object;
  trafficMode: string;
  volumes?: string[];
}

/** A deployment request's checks (createDeployment's, a fixture's), and the row they make but for its ids. */
export async function acceptDeployment(
  db: Db | Tx,
  projectId: string,
  body: components['schemas']['DeploymentCreate'],
): Promise<Omit<NewDeployment, 'id' | 'projectId' | 'endpointId'>> {
  const name = checkName(body.name, 'name');
  const autoscaling = createBounds(body.autoscaling);
  checkAutoscaling(autoscaling, 'autoscaling.');
  if (body.autoscaling) checkPolicy(body.autoscaling);
  checkPlacement(body.placement);
  const { model, modelRevisionId, config } = await resolveModelAndConfig(db, projectId, body);
  return {
    name,
    model,
    modelRevisionId,
    config,
    ...autoscaling,
    policy: body.autoscaling,
    enableLora: body.enableLora,
    placement: body.placement,
    trafficMode: body.trafficMode ?? 'TRAFFIC_MODE_LIVE',
    volumes: body.volumes,
  };
}

/** Creates a deployment: PROVISIONING (which the runner takes on), or STOPPED when it asks for no replicas. */
export async function insertDeployment(tx: Tx, timing: Timing, input: NewDeployment): Promise<Deployment> {
  if (await tx.deployment.findFirst({ where: { endpointId: input.endpointId, name: input.name } })) throw deploymentNameTaken(input.name);
  const now = instant(timing.clock);
  const running = desiredReplicas(input) > 0;
  const d = await tx.deployment.create({
    data: {
      id: input.id ?? newId('dep', timing.clock.now()),
      projectId: input.projectId,
      endpointId: input.endpointId,
      name: input.name,
      modelId: input.model.id,
      modelRevisionId: input.modelRevisionId,
      configId: input.config.id,
      minReplicas: input.minReplicas,
      maxReplicas: input.maxReplicas,
      ...policyColumns(input.policy ?? {}),
      enableLora: input.enableLora ?? false,
      placement: input.placement === undefined ? null : JSON.stringify(input.placement),
      state: running ? 'DEPLOYMENT_STATE_PROVISIONING' : 'DEPLOYMENT_STATE_STOPPED',
      message: running ? 'Provisioning replicas.' : 'Stopped (no replicas requested).',
      trafficMode: input.trafficMode,
      etag: newEtag(),
      createdAt: now,
      updatedAt: now,
    },
  });
  // Each ref is looked up on its own so that an unknown one is named by its index.
  for (const [i, ref] of (input.volumes ?? []).entries()) await attachVolumes(tx, input.projectId, d.id, [ref], `volumes.${i}`);
  await enter(tx, timing, deploymentMachine, { id: d.id, projectId: d.projectId, state: d.state, epoch: d.epoch });
  await ensureAutoscaler(tx, timing, d);
  await recordDeploymentChange(tx, timing.clock, 'api', null, d);
  return d;
}

/** Stops a deployment's replicas and releases its volumes and its autoscaler's state, before it is deleted. */
export async function releaseAll(tx: Tx, clock: Clock, deploymentId: string): Promise<void> {
  await release(tx, clock, DEPLOYMENT_OWNER, deploymentId);
  await detachVolumes(tx, deploymentId);
  await tx.autoscalerState.deleteMany({ where: { deploymentId } });
}

/** The volumes each deployment mounts, by deployment id. */
export async function mountsOf(db: Db | Tx, deploymentIds: string[]): Promise<Map<string, string[]>> {
  const mounts = await db.volumeMount.findMany({ where: { deploymentId: { in: deploymentIds } }, orderBy: { volumeId: 'asc' } });
  const out = new Map<string, string[]>(deploymentIds.map((id) => [id, []]));
  for (const m of mounts) out.get(m.deploymentId)!.push(m.volumeId);
  return out;
}

export async function endpointView(db: Db | Tx, e: DedicatedEndpoint, slug: string) {
  return v2EndpointWire(e, await deploymentsOf(db, e.id), slug);
}

export async function deploymentView(db: Db | Tx, d: Deployment, viewer: Viewer) {
  const e = await db.dedicatedEndpoint.findUniqueOrThrow({ where: { id: d.endpointId } });
  return deploymentWire(d, e, await deploymentsOf(db, e.id), viewer, (await mountsOf(db, [d.id])).get(d.id)!);
}
