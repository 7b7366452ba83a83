// Wire shapes of tag Dedicated endpoints (v2) (seed 2.16; camelCase as the public platform's v2 API).
import type { DedicatedEndpoint, Deployment, EndpointEvent, Hardware, ModelConfig } from '../../generated/prisma/sqlite/client/client.ts';
import type { Schemas } from './types.ts';

export interface SplitEntry {
  deploymentId: string;
  weight: number;
}

export const splitOf = (e: DedicatedEndpoint): SplitEntry[] => JSON.parse(e.trafficSplit);

/** Replicas a running deployment runs: no live traffic metrics here, so its minimum, and at least one. */
export const desiredReplicas = (d: { minReplicas: number; maxReplicas: number }) => (d.maxReplicas === 0 ? 0 : Math.max(d.minReplicas, 1));

/** Each deployment's share of the endpoint's traffic now: READY deployments with a positive weight, by weight. */
export function trafficShares(e: DedicatedEndpoint, deployments: Deployment[]): Map<string, number> {
  const ready = new Set(deployments.filter((d) => d.state === 'DEPLOYMENT_STATE_READY').map((d) => d.id));
  const eligible = splitOf(e).filter((s) => s.weight > 0 && ready.has(s.deploymentId));
  const total = eligible.reduce((sum, s) => sum + s.weight, 0);
  return new Map(eligible.map((s) => [s.deploymentId, s.weight / total]));
}

const modelResource = (d: Deployment) => (d.modelId.startsWith('ml_') ? `projects/${d.projectId}/models/${d.modelId}` : `models/${d.modelId}`);
const autoscaling = (d: Deployment): Schemas['Autoscaling'] => ({ minReplicas: d.minReplicas, maxReplicas: d.maxReplicas });
const running = (d: Deployment) => !['DEPLOYMENT_STATE_STOPPED', 'DEPLOYMENT_STATE_FAILED'].includes(d.state);

export const dedicatedWire = {
  modelConfig: (c: ModelConfig, hardware: Hardware[]): Schemas['ModelConfig'] => ({
    id: c.id,
    projectId: c.projectId,
    referenceModelId: c.referenceModelId,
    referenceModel: `models/${c.referenceModelId}`,
    selectors: Object.entries<string>(JSON.parse(c.selectors)).map(([key, value]) => ({ key: key as Schemas['Selector']['key'], value })),
    optimizationProfile: c.optimizationProfile as Schemas['ModelConfig']['optimizationProfile'],
    certifications: JSON.parse(c.certifications),
    draftModel: null,
    hardware: hardware.map((h) => h.id),
  }),

  v2Endpoint: (e: DedicatedEndpoint, deployments: Deployment[], projectSlug: string): Schemas['V2Endpoint'] => {
    const shares = trafficShares(e, deployments);
    return {
      id: e.id,
      projectId: e.projectId,
      name: `${projectSlug}/${e.name}`,
      visibility: e.visibility as Schemas['V2Endpoint']['visibility'],
      endpointType: 'ENDPOINT_TYPE_DEDICATED',
      trafficSplit: splitOf(e),
      deployments: deployments.map((d) => ({
        id: d.id,
        name: d.name,
        model: modelResource(d),
        modelId: d.modelId,
        state: d.state as Schemas['DeploymentState'],
        autoscaling: autoscaling(d),
        hardware: d.hardwareId,
        readyReplicas: d.readyReplicas,
        desiredReplicas: running(d) ? desiredReplicas(d) : 0,
        trafficMode: d.trafficMode as Schemas['Deployment']['trafficMode'],
        estimatedEffectiveTrafficShare: shares.get(d.id) ?? 0,
        createdAt: d.createdAt.toISOString(),
      })),
      etag: e.etag,
      createdAt: e.createdAt.toISOString(),
      updatedAt: e.updatedAt.toISOString(),
    };
  },

  deployment: (d: Deployment, e: DedicatedEndpoint, siblings: Deployment[], projectSlug: string, volumes: string[]): Schemas['Deployment'] => ({
    id: d.id,
    projectId: d.projectId,
    endpointId: d.endpointId,
    name: d.name,
    inferenceName: `${projectSlug}/${e.name}/${d.name}`,
    model: modelResource(d),
    modelId: d.modelId,
    config: `projects/${d.projectId}/configs/${d.configId}`,
    configId: d.configId,
    autoscaling: autoscaling(d),
    hardware: d.hardwareId,
    status: {
      state: d.state as Schemas['DeploymentState'],
      message: d.message,
      readyReplicas: d.readyReplicas,
      scheduledReplicas: d.state === 'DEPLOYMENT_STATE_PROVISIONING' ? desiredReplicas(d) : d.readyReplicas,
    },
    desiredReplicas: running(d) ? desiredReplicas(d) : 0,
    trafficMode: d.trafficMode as Schemas['Deployment']['trafficMode'],
    estimatedEffectiveTrafficShare: trafficShares(e, siblings).get(d.id) ?? 0,
    volumes,
    etag: d.etag,
    createdAt: d.createdAt.toISOString(),
    updatedAt: d.updatedAt.toISOString(),
  }),

  /** Optional fields are absent, not null (the official client types them `field?: T`). */
  endpointEvent: (v: EndpointEvent, projectSlug: string): Schemas['EndpointEvent'] => {
    type Event = Schemas['EndpointEvent'];
    const endpointScoped = v.sourceKind === 'SOURCE_KIND_ENDPOINT';
    return {
      id: v.id,
      createdAt: v.createdAt.toISOString(),
      level: v.level as Event['level'],
      type: v.type as Event['type'],
      source: v.source as Event['source'],
      sourceKind: v.sourceKind as Event['sourceKind'],
      endpointId: v.endpointId,
      message: v.message,
      ...(v.deploymentId !== null && { deploymentId: v.deploymentId }),
      ...(v.name !== null && { name: endpointScoped ? `${projectSlug}/${v.name}` : v.name }),
      ...(v.paths !== null && { paths: JSON.parse(v.paths) as Event['paths'] }),
      ...(v.status !== null && { status: v.status as Event['status'] }),
      ...(v.reason !== null && { reason: v.reason as Event['reason'] }),
      ...(v.oldReplicas !== null && { oldReplicas: v.oldReplicas }),
      ...(v.newReplicas !== null && { newReplicas: v.newReplicas }),
    };
  },

  deploymentUsage: (d: Deployment, runningReplicas: number, u: { replicaMinutes: number; cents: number }): Schemas['DeploymentUsage'] => ({
    deploymentId: d.id,
    name: d.name,
    hardware: d.hardwareId,
    runningReplicas,
    replicaMinutes: u.replicaMinutes,
    costCents: u.cents,
  }),
};
