// Module `dedicated`: rows -> wire shapes (camelCase, as the public platform's v2 API). Everything decided about a
// deployment (its traffic share, its desired replicas, its runtime) comes in from traffic.ts; this file only
// formats. Optional fields are absent rather than null, and strings the platform always sends are "" when empty.
import type {
  DedicatedEndpoint,
  Deployment,
  DeploymentAdapter,
  EndpointEvent,
  Hardware,
  Model,
  ModelConfig,
} from '../../../generated/prisma/sqlite/client/client.ts';
import { iso } from '../../core/clock.ts';
import type { Identity } from '../../core/identity.ts';
import { isUploadedModelId } from '../models/index.ts';
import type { Wire } from '../types.ts';
import type { Summary } from './analytics.ts';
import { desiredReplicas } from './machine.ts';
import type { PLACEMENT_PROFILE } from './placement.ts';
import { revisionOf } from './refs.ts';
import type { Supported } from './supported.ts';
import { runtimeOf, splitOf, targetReplicas, trafficShares, type Viewer } from './traffic.ts';

const modelResource = (d: Deployment) => (isUploadedModelId(d.modelId) ? `projects/${d.projectId}/models/${d.modelId}` : `models/${d.modelId}`);

function autoscaling(d: Deployment): Wire<'Autoscaling'> {
  return {
    minReplicas: d.minReplicas,
    maxReplicas: d.maxReplicas,
    ...(d.scaleDownWindow !== null && { scaleDownWindow: d.scaleDownWindow }),
    ...(d.scaleUpWindow !== null && { scaleUpWindow: d.scaleUpWindow }),
    ...(d.scaleToZeroWindow !== null && { scaleToZeroWindow: d.scaleToZeroWindow }),
    ...(d.scalingMetrics !== null && { scalingMetrics: JSON.parse(d.scalingMetrics) as Wire<'ScalingMetric'>[] }),
  };
}

/** A page of a v2 list: `next_cursor` is "" on the last page. */
export const listWire = <T>(data: T[], next: string | null) => ({ object: 'list' as const, data, next_cursor: next ?? '' });

/** A certification as stored: the public platform's record, with its instant in milliseconds. */
type StoredCertification = Omit<Wire<'Certification'>, 'certifiedAt'> & { certifiedAt: number };

export function modelConfigWire(c: ModelConfig, hardware: Hardware[]): Wire<'ModelConfig'> {
  return {
    id: c.id,
    projectId: c.projectId ?? '',
    referenceModelId: c.referenceModelId,
    referenceModel: `models/${c.referenceModelId}`,
    selectors: Object.entries<string>(JSON.parse(c.selectors)).map(([key, value]) => ({ key: key as Wire<'Selector'>['key'], value })),
    optimizationProfile: c.optimizationProfile as Wire<'ModelConfig'>['optimizationProfile'],
    certifications: (JSON.parse(c.certifications) as StoredCertification[]).map((x) => ({ ...x, certifiedAt: iso(x.certifiedAt) })),
    draftModel: '',
    hardware: hardware.map((h) => h.id),
  };
}

export function v2EndpointWire(e: DedicatedEndpoint, deployments: Deployment[], projectSlug: string): Wire<'V2Endpoint'> {
  const shares = trafficShares(e, deployments);
  return {
    id: e.id,
    projectId: e.projectId,
    name: `${projectSlug}/${e.name}`,
    visibility: e.visibility as Wire<'V2Endpoint'>['visibility'],
    endpointType: 'ENDPOINT_TYPE_DEDICATED',
    trafficSplit: splitOf(e),
    deployments: deployments.map((d) => ({
      id: d.id,
      name: d.name,
      model: modelResource(d),
      modelId: d.modelId,
      state: d.state as Wire<'DeploymentState'>,
      autoscaling: autoscaling(d),
      hardware: d.hardwareId ?? '',
      readyReplicas: d.readyReplicas,
      desiredReplicas: targetReplicas(d),
      trafficMode: d.trafficMode as Wire<'Deployment'>['trafficMode'],
      estimatedEffectiveTrafficShare: shares.get(d.id) ?? 0,
      createdAt: iso(d.createdAt),
    })),
    etag: e.etag,
    createdAt: iso(e.createdAt),
    updatedAt: iso(e.updatedAt),
  };
}

export function deploymentWire(d: Deployment, e: DedicatedEndpoint, siblings: Deployment[], viewer: Viewer, volumes: string[]): Wire<'Deployment'> {
  const { projectSlug } = viewer.identity;
  return {
    id: d.id,
    projectId: d.projectId,
    endpointId: d.endpointId,
    name: d.name,
    inferenceName: `${projectSlug}/${e.name}/${d.name}`,
    model: modelResource(d),
    modelId: d.modelId,
    modelRevisionId: d.modelRevisionId,
    config: `projects/${d.projectId}/configs/${d.configId}`,
    configId: d.configId,
    autoscaling: autoscaling(d),
    enableLora: d.enableLora,
    ...(d.placement !== null && { placement: JSON.parse(d.placement) as Wire<'Placement'> }),
    hardware: d.hardwareId ?? '',
    runtimeInfo: runtimeOf(d, viewer.engines),
    status: {
      state: d.state as Wire<'DeploymentState'>,
      message: d.message,
      readyReplicas: d.readyReplicas,
      scheduledReplicas: d.state === 'DEPLOYMENT_STATE_PROVISIONING' ? desiredReplicas(d) : d.readyReplicas,
    },
    desiredReplicas: targetReplicas(d),
    trafficMode: d.trafficMode as Wire<'Deployment'>['trafficMode'],
    estimatedEffectiveTrafficShare: trafficShares(e, siblings).get(d.id) ?? 0,
    volumes,
    etag: d.etag,
    createdAt: iso(d.createdAt),
    updatedAt: iso(d.updatedAt),
  };
}

/** Optional fields are absent, not null (the official client types them `field?: T`). */
export function endpointEventWire(v: EndpointEvent, projectSlug: string): Wire<'EndpointEvent'> {
  type Event = Wire<'EndpointEvent'>;
  const endpointScoped = v.sourceKind === 'SOURCE_KIND_ENDPOINT';
  return {
    id: v.id,
    createdAt: iso(v.createdAt),
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
}

export function deploymentUsageWire(d: Deployment, runningReplicas: number, u: { replicaMinutes: number; cents: number }): Wire<'DeploymentUsage'> {
  return { deploymentId: d.id, name: d.name, hardware: d.hardwareId, runningReplicas, replicaMinutes: u.replicaMinutes, costCents: u.cents };
}

/** A serverless catalogue model as the public endpoint serving it: it belongs to no project. */
export function publicEndpointWire(m: Model): Wire<'PublicEndpoint'> {
  return { id: m.id, projectId: '', name: m.id, createdAt: iso(m.createdAt), updatedAt: iso(m.createdAt), visibility: 'VISIBILITY_PUBLIC' };
}

/** The one placement profile, as the caller's project's. */
export function placementProfileWire(p: typeof PLACEMENT_PROFILE, identity: Identity): Wire<'PlacementProfile'> {
  return { id: p.id, projectId: identity.projectId, organizationId: identity.organizationId, name: p.name, preferredRegions: [...p.preferredRegions] };
}

type SupportedWire = Wire<'SupportedModel'>;
type Modality = SupportedWire['inputModalities'][number];

/** What each kind of model takes and makes, and the public platform's capability for it (none for audio). */
const KINDS: Record<string, { input: Modality[]; output: Modality[]; capability?: SupportedWire['capabilities'][number] }> = {
  chat: { input: ['MODALITY_TEXT'], output: ['MODALITY_TEXT'], capability: 'CAPABILITY_CHAT' },
  language: { input: ['MODALITY_TEXT'], output: ['MODALITY_TEXT'], capability: 'CAPABILITY_CHAT' },
  code: { input: ['MODALITY_TEXT'], output: ['MODALITY_TEXT'], capability: 'CAPABILITY_CHAT' },
  moderation: { input: ['MODALITY_TEXT'], output: ['MODALITY_TEXT'], capability: 'CAPABILITY_CHAT' },
  embedding: { input: ['MODALITY_TEXT'], output: ['MODALITY_TEXT'], capability: 'CAPABILITY_EMBEDDING' },
  rerank: { input: ['MODALITY_TEXT'], output: ['MODALITY_TEXT'], capability: 'CAPABILITY_RERANKING' },
  image: { input: ['MODALITY_TEXT'], output: ['MODALITY_IMAGE'], capability: 'CAPABILITY_IMAGE_GENERATION' },
  video: { input: ['MODALITY_TEXT', 'MODALITY_IMAGE'], output: ['MODALITY_VIDEO'], capability: 'CAPABILITY_VIDEO_GENERATION' },
  audio: { input: ['MODALITY_AUDIO', 'MODALITY_TEXT'], output: ['MODALITY_TEXT', 'MODALITY_AUDIO'] },
};

export const kindOf = (m: Model) => KINDS[m.type] ?? KINDS.chat!;

/** Products are decided by the caller (supported-models handler); this only formats. */
export function supportedModelWire(s: Supported, products: SupportedWire['products']): SupportedWire {
  const { model: m } = s;
  const kind = kindOf(m);
  const context = m.contextLength === null ? undefined : String(m.contextLength);
  const chat = kind.capability === 'CAPABILITY_CHAT' && m.type === 'chat';
  return {
    id: m.id,
    name: m.id,
    displayName: m.displayName ?? m.id,
    ...(m.description !== null && { description: m.description }),
    inputModalities: kind.input,
    outputModalities: kind.output,
    products,
    ...(chat && { features: ['FEATURE_TOOL_CALLING', 'FEATURE_STRUCTURED_OUTPUT'] as SupportedWire['features'] }),
    capabilities: kind.capability ? [kind.capability] : [],
    ...(m.architecture !== null && { architecture: m.architecture, familyId: m.architecture }),
    ...(context !== undefined && { contextLength: context }),
    publisher: m.organization ?? '',
    status: 'SUPPORTED_MODEL_STATUS_SUPPORTED',
    ...(m.serverless && { serverlessEndpoint: m.id }),
    displayType: m.type,
    baseModelId: m.id,
    baseModel: `models/${m.id}`,
    deploymentProfiles: s.profiles.map((p) => ({
      profileId: p.config.id,
      certifiedConfigRevisionId: p.config.id,
      certifiedModelRevisionId: revisionOf(p.config.referenceModelId),
      gpuType: p.hardware.gpuType,
      gpuCount: p.hardware.gpuCount,
      quantization: p.precision,
      performanceBenchmarks: context === undefined ? {} : { maxContextLength: context },
      config: p.config.id,
      model: `models/${m.id}/revisions/${revisionOf(m.id)}`,
      parallelism: `TP${p.hardware.gpuCount}`,
      modelName: m.id,
    })),
    createdAt: iso(m.createdAt),
    updatedAt: iso(m.createdAt),
  };
}

/**
 * An adapter bound to a deployment, with its load state on the one placement (`local`): READY on the deployment's
 * ready replicas while the deployment is READY, else PENDING (it loads when replicas start).
 */
export function deploymentAdapterWire(b: DeploymentAdapter, d: Deployment): Wire<'DeploymentAdapter'> {
  const model = `projects/${b.projectId}/models/${b.adapterModelId}`;
  const loaded = d.state === 'DEPLOYMENT_STATE_READY';
  const replicas = targetReplicas(d) || desiredReplicas(d);
  return {
    adapterModelId: b.adapterModelId,
    desiredRevisionId: b.revisionId,
    etag: b.etag,
    adapterModel: model,
    desiredRevision: `${model}/revisions/${b.revisionId}`,
    perCluster: [
      {
        adapterModelId: b.adapterModelId,
        adapterModel: model,
        clusterId: 'local',
        state: loaded ? 'ADAPTER_LOAD_STATE_READY' : 'ADAPTER_LOAD_STATE_PENDING',
        readyPodCount: loaded ? d.readyReplicas : 0,
        failedPodCount: 0,
        totalPodCount: replicas,
        updatedAt: iso(b.updatedAt),
        ...(loaded && {
          realizedRevisionId: b.revisionId,
          realizedRevision: `${model}/revisions/${b.revisionId}`,
          realizedEtag: b.etag,
          loadedAt: iso(Math.max(Number(b.updatedAt), Number(d.updatedAt))),
        }),
      },
    ],
  };
}

/** An analytics range `[since, until)`. */
const timeRangeWire = (r: { since: number; until: number }): Wire<'MetricsTimeRange'> => ({ startTime: iso(r.since), endTime: iso(r.until) });

const percent = (s: Summary) => s.errorRate * 100;
const perSecond = (n: number, s: Summary) => (s.seconds > 0 ? n / s.seconds : 0);
const countsOf = (entries: [number, number][]) => Object.fromEntries(entries.map(([status, n]) => [String(status), String(n)]));

/** The figures of an analytics summary, as the platform's metric groups (counts as int64 strings, error rate in percent). */
function metricGroups(s: Summary) {
  const byStatus = [...s.byStatus.entries()].sort((a, b) => a[0] - b[0]);
  return {
    requestMetrics: {
      totalRequests: String(s.requests),
      successfulRequests: String(s.requests - s.errors),
      failedRequests: String(s.errors),
      requestsPerSecond: perSecond(s.requests, s),
      requestsByStatusCode: countsOf(byStatus),
    },
    latencyMetrics: { latencyP50Ms: s.latencyMs.p50, latencyP90Ms: s.latencyMs.p90, latencyP99Ms: s.latencyMs.p99 },
    throughputMetrics: { tokensPerSecond: perSecond(s.completionTokens, s), requestsPerSecond: perSecond(s.requests, s) },
    errorMetrics: { errorRate: percent(s), errorsByType: countsOf(byStatus.filter(([status]) => status >= 500)) },
    tokenMetrics: {
      totalInputTokens: String(s.promptTokens),
      totalOutputTokens: String(s.completionTokens),
      avgInputTokens: s.requests ? s.promptTokens / s.requests : 0,
      avgOutputTokens: s.requests ? s.completionTokens / s.requests : 0,
    },
  };
}

/** One time-series bucket: its start and its figures by name. */
export function timeSeriesPointWire(start: number, s: Summary): Wire<'TimeSeriesDataPoint'> {
  return {
    timestamp: iso(start),
    values: {
      totalRequests: s.requests,
      successfulRequests: s.requests - s.errors,
      failedRequests: s.errors,
      errorRate: percent(s),
      requestsPerSecond: perSecond(s.requests, s),
      latencyP50Ms: s.latencyMs.p50,
      latencyP90Ms: s.latencyMs.p90,
      latencyP99Ms: s.latencyMs.p99,
      inputTokens: s.promptTokens,
      outputTokens: s.completionTokens,
    },
  };
}

export function deploymentMetricsWire(
  endpointId: string,
  deploymentId: string,
  range: { since: number; until: number },
  s: Summary,
): Wire<'DeploymentMetrics'> {
  return { deploymentId, endpointId, timeRange: timeRangeWire(range), ...metricGroups(s) };
}

export function deploymentAnalyticsWire(
  metrics: Wire<'DeploymentMetrics'>,
  series: Wire<'TimeSeriesDataPoint'>[] | null,
  trafficMode: 'TRAFFIC_MODE_LIVE' | 'TRAFFIC_MODE_SHADOW',
): Wire<'DeploymentAnalyticsData'> {
  return {
    deploymentId: metrics.deploymentId,
    endpointId: metrics.endpointId,
    trafficMode,
    timeRange: metrics.timeRange,
    metrics,
    ...(series && { timeSeries: series }),
  };
}

export function analyticsWire(
  endpointId: string,
  range: { since: number; until: number },
  s: Summary,
  series: Wire<'TimeSeriesDataPoint'>[] | null,
  live: Wire<'DeploymentAnalyticsData'>[],
  shadow: Wire<'DeploymentAnalyticsData'>[],
): Wire<'AnalyticsData'> {
  const timeRange = timeRangeWire(range);
  return {
    endpointId,
    timeRange,
    metrics: { endpointId, timeRange, ...metricGroups(s), deploymentMetrics: live.map((d) => d.metrics) },
    ...(series && { timeSeries: series }),
    deploymentAnalytics: [...live, ...shadow],
  };
}
