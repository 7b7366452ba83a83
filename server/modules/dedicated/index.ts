// Module `dedicated` (spec/tags/dedicated.yaml): the v2 dedicated endpoint model: endpoints (handlers/endpoints.ts,
// with the migration's one-call deploy), deployments (handlers/deployments.ts) moved by one machine (machine.ts)
// and the runner's provisioning onto hardware (provisioning.ts, placement.ts), the metric-based autoscaler (autoscaling.ts), published configs
// (handlers/configs.ts), adapters bound to deployments (handlers/deployment-adapters.ts), traffic splits and routing (traffic.ts), the lists' filters, orders and pages
// (listing.ts), analytics counted from what the deployments served (served.ts, analytics.ts, handlers/analytics.ts), the lifecycle events feed (events.ts), and the reads of what the platform offers: the organization's
// and the public endpoints (handlers/endpoints.ts), placement profiles (handlers/placement-profiles.ts) and the
// models deployable here with their profiles (supported.ts, handlers/supported-models.ts).
import { instant } from '../../core/clock.ts';
import { progressionWork } from '../../runner/progress.ts';
import type { ModuleDescriptor, SeedContext } from '../types.ts';
import { autoscalerWork } from './autoscaling.ts';
import { getV2EndpointAnalytics } from './handlers/analytics.ts';
import { getConfig, listConfigs } from './handlers/configs.ts';
import {
  addDeploymentAdapter,
  getDeploymentAdapter,
  listDeploymentAdapters,
  removeDeploymentAdapter,
  updateDeploymentAdapter,
} from './handlers/deployment-adapters.ts';
import { createDeployment, deleteDeployment, getDeployment, listDeployments, updateDeployment } from './handlers/deployments.ts';
import {
  createV2Endpoint,
  deleteV2Endpoint,
  deployModel,
  getV2Endpoint,
  getV2EndpointUsage,
  listOrganizationEndpoints,
  listPublicEndpoints,
  listV2EndpointEvents,
  listV2Endpoints,
  updateV2Endpoint,
} from './handlers/endpoints.ts';
import { getPlacementProfile, listPlacementProfiles } from './handlers/placement-profiles.ts';
import { getSupportedModel, listSupportedModels } from './handlers/supported-models.ts';
import { deploymentMachine } from './machine.ts';
import { deploymentProgression } from './provisioning.ts';
import { revisionOf } from './refs.ts';
import data from './seed.json' with { type: 'json' };
import { v2EndpointsSection } from './seeded.ts';
import { RETENTION_KIND, retentionWork } from './served.ts';
import { AUTOSCALER_KIND } from './traffic.ts';

// What this module offers the others.
export { timeRange } from './analytics.ts';
export { readyEstimate } from './autoscaling.ts';
export { setReplicas } from './scale.ts';
export { figures, nearestRank, recordServed, recordServedMany, type Served, type ServedFigures, servedFigures, servedRows, shadowRows } from './served.ts';
export { adapterServers, routeRequest, type SplitEntry, splitOf, steerTraffic, type TrafficOwner, trafficSteered } from './traffic.ts';

/** The published configs (seed.json), with their certification records; a config whose model the catalogue lacks is left out. */
async function seed({ tx, clock }: SeedContext): Promise<void> {
  for (const c of data.configs) {
    if (!(await tx.model.findUnique({ where: { id: c.model } }))) continue;
    const certifications = c.certifications.map((precision) => ({
      target: 'CERTIFICATION_TARGET_DE_SERVERLESS',
      certificationType: 'CERTIFICATION_TYPE_CERTIFIED',
      certifiedAt: Date.parse(data.certifiedAt),
      certifiedBy: data.certifiedBy,
      model: `models/${c.model}`,
      modelRevisionId: revisionOf(c.model),
      notes: `Certified with ${precision} weights.`,
    }));
    await tx.modelConfig.create({
      data: {
        id: c.id,
        projectId: null,
        referenceModelId: c.model,
        selectors: JSON.stringify(c.selectors),
        optimizationProfile: c.profile,
        certifications: JSON.stringify(certifications),
        createdAt: instant(clock),
      },
    });
  }
}

export const dedicated: ModuleDescriptor<'dedicated'> = {
  name: 'dedicated',
  handlers: {
    listConfigs,
    getConfig,
    deployModel,
    listV2Endpoints,
    createV2Endpoint,
    getV2Endpoint,
    updateV2Endpoint,
    deleteV2Endpoint,
    getV2EndpointUsage,
    getV2EndpointAnalytics,
    listV2EndpointEvents,
    listDeployments,
    createDeployment,
    getDeployment,
    updateDeployment,
    deleteDeployment,
    listDeploymentAdapters,
    addDeploymentAdapter,
    getDeploymentAdapter,
    updateDeploymentAdapter,
    removeDeploymentAdapter,
    listOrganizationEndpoints,
    listPublicEndpoints,
    listPlacementProfiles,
    getPlacementProfile,
    listSupportedModels,
    getSupportedModel,
  },
  seed,
  machines: [deploymentMachine],
  work: (services) => ({
    [deploymentMachine.kind]: progressionWork(deploymentProgression(services), services),
    [AUTOSCALER_KIND]: autoscalerWork(services),
    [RETENTION_KIND]: retentionWork(services),
  }),
  steer: (services) => ({ deployment: { progression: deploymentProgression(services), creates: ['createDeployment', 'deployModel'] } }),
  fixtureSections: { v2_endpoints: v2EndpointsSection },
  fixtures: async () => (await import('./fixtures.ts')).fixtures,
};
