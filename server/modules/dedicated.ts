// Tag Dedicated endpoints (v2) (seed 2.16, 9): endpoints, deployments, published configs, the traffic split, the
// migration's one-call deploy, and the deployment state machine the durable runner drives (provisioning onto
// hardware that matches the config's selectors and has capacity; stopping). Running replicas hold hardware
// reservations (server/capacity.ts), which is both their capacity and their per-minute billing.
import { randomBytes } from 'node:crypto';
import type { DedicatedEndpoint, Deployment, Hardware, Model, ModelConfig } from '../../generated/prisma/sqlite/client/client.ts';
import type { AppOptions } from '../app.ts';
import { canRun, release, reserveIfFree, usage } from '../capacity.ts';
import type { Clock } from '../clock.ts';
import { duration, type Config } from '../config.ts';
import type { Db, Tx } from '../db/index.ts';
import { apiError, badRequest, conflict, notFound } from '../errors.ts';
import type { ModuleHandlers, RequestBody } from '../handlers.ts';
import { newId } from '../ids.ts';
import { enqueue, type Runner } from '../runner.ts';
import type { SeedContext } from '../seed.ts';
import { seedData } from '../seed.ts';
import { wire } from '../wire/index.ts';
import { attachVolumes, detachVolumes } from './volumes.ts';
import { desiredReplicas, splitOf, type SplitEntry } from '../wire/dedicated.ts';
import { owned } from '../scope.ts';

export const DEPLOYMENT_OWNER = 'deployment';
const WORK_KIND = 'deployment';

// ---- The deployment state machine -----------------------------------------------------------------------------

export type DeploymentState =
  | 'DEPLOYMENT_STATE_PROVISIONING'
  | 'DEPLOYMENT_STATE_READY'
  | 'DEPLOYMENT_STATE_SCALING'
  | 'DEPLOYMENT_STATE_DEGRADED'
  | 'DEPLOYMENT_STATE_FAILED'
  | 'DEPLOYMENT_STATE_STOPPED'
  | 'DEPLOYMENT_STATE_STOPPING';
export type DeploymentEvent = 'provisioned' | 'failed' | 'stop' | 'stopped' | 'start';

const PROVISIONING = 'DEPLOYMENT_STATE_PROVISIONING';
const READY = 'DEPLOYMENT_STATE_READY';
const FAILED = 'DEPLOYMENT_STATE_FAILED';
const STOPPED = 'DEPLOYMENT_STATE_STOPPED';
const STOPPING = 'DEPLOYMENT_STATE_STOPPING';

/** The one transition table of deployments. SCALING and DEGRADED are the public platform's; nothing enters them here. */
export const deploymentTransitions: Record<DeploymentState, Partial<Record<DeploymentEvent, DeploymentState>>> = {
  DEPLOYMENT_STATE_PROVISIONING: { provisioned: READY, failed: FAILED, stop: STOPPED },
  DEPLOYMENT_STATE_READY: { stop: STOPPING },
  DEPLOYMENT_STATE_STOPPING: { stopped: STOPPED },
  DEPLOYMENT_STATE_STOPPED: { start: PROVISIONING },
  DEPLOYMENT_STATE_FAILED: { start: PROVISIONING, stop: STOPPED },
  DEPLOYMENT_STATE_SCALING: {},
  DEPLOYMENT_STATE_DEGRADED: {},
};

export function deploymentTransition(from: string, event: DeploymentEvent): DeploymentState {
  const to = deploymentTransitions[from as DeploymentState]?.[event];
  if (!to) throw conflict(`A deployment in state ${from} cannot ${event}.`, 'invalid_state_transition', 'autoscaling');
  return to;
}

const provisionDelay = (config: Config) => duration(config, 'deployment_provision', 60_000);
const stopDelay = (config: Config) => duration(config, 'deployment_stop', 10_000);
const newEtag = () => randomBytes(8).toString('hex');

/** Schedules the runner's next step of a deployment; items carry the epoch and are skipped once it moved on. */
const schedule = (tx: Tx, clock: Clock, d: Deployment, delayMs: number) =>
  enqueue(tx, clock, { kind: WORK_KIND, subjectId: d.id, projectId: d.projectId, payload: { epoch: d.epoch }, delayMs });

// ---- Lifecycle events (GET .../endpoints/{id}/events) -----------------------------------------------------------

interface EventFields {
  type: string;
  level?: 'LEVEL_INFO' | 'LEVEL_ERROR';
  deploymentId?: string;
  message: string;
  name?: string;
  paths?: string[];
  status?: string;
  reason?: string | null;
  oldReplicas?: number;
  newReplicas?: number;
}

/** Who emitted an event: a caller's request, or the runner's step of the deployment state machine. */
type EventSource = 'api' | 'runner';

/**
 * Appends one event to an endpoint's feed, in the transaction of the change it records. Bumping the endpoint's
 * eventSeq takes its row lock until commit, so per endpoint the numbering follows commit order (a cursor never
 * skips an event committed after a later-numbered one).
 */
async function recordEvent(tx: Tx, clock: Clock, source: EventSource, projectId: string, endpointId: string, f: EventFields): Promise<void> {
  const { eventSeq } = await tx.dedicatedEndpoint.update({ where: { id: endpointId }, data: { eventSeq: { increment: 1 } } });
  const now = clock.now();
  await tx.endpointEvent.create({
    data: {
      id: newId('evt', now),
      projectId,
      endpointId,
      seq: eventSeq,
      type: f.type,
      level: f.level ?? 'LEVEL_INFO',
      sourceKind: f.deploymentId ? 'SOURCE_KIND_DEPLOYMENT' : 'SOURCE_KIND_ENDPOINT',
      source,
      deploymentId: f.deploymentId ?? null,
      message: f.message,
      name: f.name ?? null,
      paths: f.paths ? JSON.stringify(f.paths) : null,
      status: f.status ?? null,
      reason: f.reason ?? null,
      oldReplicas: f.oldReplicas ?? null,
      newReplicas: f.newReplicas ?? null,
      createdAt: new Date(now),
    },
  });
}

/** The table's event that takes a deployment from one state to another (each state's targets are distinct). */
const transitionEvent = (from: string, to: string): DeploymentEvent | null =>
  (Object.entries(deploymentTransitions[from as DeploymentState] ?? {}) as [DeploymentEvent, string][]).find(([, s]) => s === to)?.[0] ?? null;

/** Records what a write did to a deployment: created (no `before`), deleted (no `after`), a transition, a resize, an edit. */
async function recordDeploymentChange(tx: Tx, clock: Clock, source: EventSource, before: Deployment | null, after: Deployment | null): Promise<void> {
  const d = (after ?? before)!;
  const record = (f: Omit<EventFields, 'deploymentId'>) => recordEvent(tx, clock, source, d.projectId, d.endpointId, { ...f, deploymentId: d.id });
  if (!before) {
    const replicas = d.state === STOPPED ? 0 : desiredReplicas(d);
    return record({ type: 'deployment.created', name: d.name, status: d.state, newReplicas: replicas, message: `Deployment '${d.name}' created: ${d.message}` });
  }
  if (!after) return record({ type: 'deployment.deleted', name: d.name, message: `Deployment '${d.name}' deleted.` });
  if (before.state !== after.state) {
    const level = after.state === FAILED ? 'LEVEL_ERROR' : 'LEVEL_INFO';
    return record({ type: 'deployment.state_changed', level, status: after.state, reason: transitionEvent(before.state, after.state), message: after.message });
  }
  if (after.state === READY && before.readyReplicas !== after.readyReplicas) {
    return record({ type: 'deployment.scaled', status: after.state, oldReplicas: before.readyReplicas, newReplicas: after.readyReplicas, message: after.message });
  }
  const autoscaled = before.minReplicas !== after.minReplicas || before.maxReplicas !== after.maxReplicas;
  const paths = [...(before.name !== after.name ? ['name'] : []), ...(autoscaled ? ['autoscaling'] : [])];
  if (paths.length) return record({ type: 'deployment.updated', status: after.state, paths, message: `Deployment '${after.name}' changed: ${paths.join(', ')}.` });
}

/** Records an endpoint's creation (no `before`) or which of its fields a write changed (nothing when none did). */
async function recordEndpointChange(tx: Tx, clock: Clock, before: DedicatedEndpoint | null, after: DedicatedEndpoint): Promise<void> {
  const record = (f: EventFields) => recordEvent(tx, clock, 'api', after.projectId, after.id, f);
  if (!before) return record({ type: 'endpoint.created', name: after.name, message: `Endpoint '${after.name}' created.` });
  const paths = (['name', 'visibility', 'trafficSplit'] as const).filter((f) => before[f] !== after[f]);
  if (paths.length === 0) return;
  const split = paths.includes('trafficSplit') ? ` Traffic split: ${after.trafficSplit}.` : '';
  await record({ type: 'endpoint.updated', paths: [...paths], message: `Endpoint '${after.name}' changed: ${paths.join(', ')}.${split}` });
}

// ---- Hardware placement -----------------------------------------------------------------------------------------

const SELECTOR_FIELDS: Record<string, (h: Hardware) => string> = {
  gpu_type: (h) => h.gpuType,
  gpu_count: (h) => String(h.gpuCount),
  gpu_link: (h) => h.gpuLink,
  gpu_memory: (h) => String(h.gpuMemory),
};

const selectorsOf = (c: ModelConfig): Record<string, string> => JSON.parse(c.selectors);

/** Hardware configurations that match every selector of the config and hold the model, cheapest first. */
export async function matchingHardware(db: Db | Tx, config: ModelConfig, minGpuMemory: number | null): Promise<Hardware[]> {
  const selectors = Object.entries(selectorsOf(config));
  const all = await db.hardware.findMany({ orderBy: [{ centsPerMinute: 'asc' }, { id: 'asc' }] });
  return all.filter((h) => selectors.every(([k, v]) => SELECTOR_FIELDS[k]?.(h) === v) && canRun(h, { minGpuMemory }));
}

/** Provisioning's outcome, decided (and the replicas reserved on the first matching hardware with room) inside the transaction that applies it. */
async function place(tx: Tx, clock: Clock, d: Deployment): Promise<{ hardware: Hardware } | { failure: string }> {
  const [config, model] = await Promise.all([tx.modelConfig.findUnique({ where: { id: d.configId } }), tx.model.findUnique({ where: { id: d.modelId } })]);
  if (!config || !model) return { failure: 'The model or config no longer exists.' };
  const candidates = await matchingHardware(tx, config, model.minGpuMemory);
  if (candidates.length === 0) {
    const wanted = Object.entries(selectorsOf(config)).map(([k, v]) => `${k}=${v}`).join(', ');
    return { failure: `No hardware configuration matches config ${config.id}'s selectors (${wanted}) and holds ${model.id}.` };
  }
  const replicas = desiredReplicas(d);
  for (const h of candidates) {
    if (await reserveIfFree(tx, clock, { projectId: d.projectId, hardwareId: h.id, replicas, ownerKind: DEPLOYMENT_OWNER, ownerId: d.id })) return { hardware: h };
  }
  return { failure: `Insufficient capacity: no free ${candidates.map((h) => h.id).join(' or ')} capacity for ${replicas} replica(s).` };
}

/** One runner step: moves a PROVISIONING deployment to READY or FAILED, or a STOPPING one to STOPPED. */
async function advance(tx: Tx, clock: Clock, id: string, epoch: number): Promise<void> {
  const d = await tx.deployment.findUnique({ where: { id } });
  if (!d || d.epoch !== epoch) return; // deleted, or a caller changed it since: a newer item (if any) takes over
  const now = new Date(clock.now());
  if (d.state === PROVISIONING) {
    const outcome = await place(tx, clock, d);
    if ('failure' in outcome) {
      const failed = await tx.deployment.update({
        where: { id },
        data: { state: deploymentTransition(d.state, 'failed'), message: outcome.failure, etag: newEtag(), updatedAt: now },
      });
      await recordDeploymentChange(tx, clock, 'runner', d, failed);
      return;
    }
    const replicas = desiredReplicas(d);
    const ready = await tx.deployment.update({
      where: { id },
      data: {
        state: deploymentTransition(d.state, 'provisioned'),
        hardwareId: outcome.hardware.id,
        readyReplicas: replicas,
        message: `${replicas} replica(s) ready on ${outcome.hardware.id}.`,
        etag: newEtag(),
        updatedAt: now,
      },
    });
    await recordDeploymentChange(tx, clock, 'runner', d, ready);
  } else if (d.state === STOPPING) {
    await release(tx, clock, DEPLOYMENT_OWNER, d.id);
    const stopped = await tx.deployment.update({
      where: { id },
      data: { state: deploymentTransition(d.state, 'stopped'), readyReplicas: 0, message: 'Stopped.', etag: newEtag(), updatedAt: now },
    });
    await recordDeploymentChange(tx, clock, 'runner', d, stopped);
  }
}

export function registerDeployments(runner: Runner, { clock }: AppOptions): void {
  runner.register(WORK_KIND, { run: async (item) => ({ apply: (tx) => advance(tx, clock, item.subjectId, Number(item.payload.epoch)) }) });
}

// ---- Seed ---------------------------------------------------------------------------------------------------------

interface ConfigSeed {
  configs: Array<{ id: string; model: string; profile: string; selectors: Record<string, string>; certifications: string[] }>;
}

/** Seeder: the published configs (prisma/seed/endpoints.json); a config whose model is missing is left out. */
export async function seedConfigs({ tx, clock }: SeedContext): Promise<void> {
  for (const c of seedData<ConfigSeed>('endpoints').configs) {
    if (!(await tx.model.findUnique({ where: { id: c.model } }))) continue;
    await tx.modelConfig.create({
      data: {
        id: c.id,
        projectId: null,
        referenceModelId: c.model,
        selectors: JSON.stringify(c.selectors),
        optimizationProfile: c.profile,
        certifications: JSON.stringify(c.certifications),
        createdAt: new Date(clock.now()),
      },
    });
  }
}

// ---- Lookups ------------------------------------------------------------------------------------------------------

/** `{projectId}` must be the caller's: any other answers exactly like an absent resource. */
function checkProject(ctx: { params: { projectId: string }; identity: { projectId: string } }): string {
  if (ctx.params.projectId !== ctx.identity.projectId) throw notFound('project', ctx.params.projectId, 'projectId');
  return ctx.identity.projectId;
}

async function findEndpoint(db: Db | Tx, projectId: string, id: string): Promise<DedicatedEndpoint> {
  return owned(db.dedicatedEndpoint, projectId, { id }, { what: 'endpoint', id, param: 'endpointId' });
}

async function findDeployment(db: Db | Tx, projectId: string, endpointId: string, id: string): Promise<Deployment> {
  return owned(db.deployment, projectId, { id, endpointId }, { what: 'deployment', id, param: 'deploymentId' });
}

const deploymentsOf = (db: Db | Tx, endpointId: string) => db.deployment.findMany({ where: { endpointId }, orderBy: { id: 'asc' } });

function checkEtag(given: string | undefined, current: string): void {
  if (given !== undefined && given !== current) {
    throw conflict(`The etag '${given}' is not the current one; read the resource again and retry.`, 'etag_mismatch', 'etag');
  }
}

/** Applies `updateMask`: only the named fields, each of which must be in the body. */
function masked<T extends Record<string, unknown>>(body: T, mask: string | undefined, allowed: string[]): Partial<T> {
  if (mask === undefined) return body;
  const out: Partial<T> = {};
  for (const field of mask.split(',')) {
    if (!allowed.includes(field)) throw badRequest(`'${field}' cannot be updated (one of: ${allowed.join(', ')}).`, 'updateMask', 'invalid_update_mask');
    if (body[field] === undefined) throw badRequest(`'updateMask' names '${field}', which the body does not carry.`, 'updateMask', 'invalid_update_mask');
    (out as Record<string, unknown>)[field] = body[field];
  }
  return out;
}

/** Endpoint names are unique per project across both generations: both are addressed as `<slug>/<name>`. */
async function checkNameFree(tx: Tx, projectId: string, name: string, param: string): Promise<void> {
  const [v1, v2] = await Promise.all([tx.v1Endpoint.findFirst({ where: { projectId, name } }), tx.dedicatedEndpoint.findFirst({ where: { projectId, name } })]);
  if (v1 || v2) throw conflict(`This project already has an endpoint named '${name}'.`, 'endpoint_name_taken', param);
}

/** The deployable model a body's `model` names, and what it needs to run (uploads run like their base). */
async function resolveModel(db: Db | Tx, projectId: string, ref: string, param: string): Promise<Model> {
  const m = /^projects\/([^/]+)\/models\/(.+)$/.exec(ref) ?? /^()models\/(.+)$/.exec(ref);
  const id = m ? m[2]! : ref;
  const model = m && m[1] && m[1] !== projectId ? null : await db.model.findFirst({ where: { id, OR: [{ projectId: null }, { projectId }] } });
  if (!model) throw badRequest(`No model '${ref}' exists in the catalogue or this project.`, param, 'model_not_found');
  if (model.projectId === null) {
    if (model.minGpuMemory === null) throw badRequest(`Model '${id}' is served serverless only and cannot be deployed.`, param, 'model_not_deployable');
    return model;
  }
  if (model.modelType === 'adapter') throw badRequest(`'${id}' is an adapter; bind it to an endpoint of its base model instead.`, param, 'model_is_adapter');
  if (model.status !== 'ready') throw badRequest(`Model '${id}' has not finished uploading (status ${model.status}).`, param, 'model_not_ready');
  const base = model.architecture
    ? await db.model.findFirst({ where: { projectId: null, architecture: model.architecture, minGpuMemory: { not: null } } })
    : null;
  if (!base || model.minGpuMemory === null) {
    throw badRequest(`Model '${id}' is not a fine-tuned variant of a base architecture this platform serves on dedicated hardware.`, param, 'unsupported_architecture');
  }
  return model;
}

/** The published config a body's `config` names; it must be for the model's architecture. */
async function resolveConfig(db: Db | Tx, projectId: string, ref: string, model: Model, param: string): Promise<ModelConfig> {
  const m = /^projects\/([^/]+)\/configs\/(.+)$/.exec(ref);
  const id = m ? m[2]! : ref;
  const config = m && m[1] !== projectId ? null : await db.modelConfig.findFirst({ where: { id, OR: [{ projectId: null }, { projectId }] } });
  if (!config) throw badRequest(`No published config '${ref}' exists.`, param, 'config_not_found');
  const reference = await db.model.findUnique({ where: { id: config.referenceModelId } });
  if (config.referenceModelId !== model.id && (!reference?.architecture || reference.architecture !== model.architecture)) {
    throw badRequest(`Config '${id}' is published for ${config.referenceModelId}, not for ${model.id}'s architecture.`, param, 'config_model_mismatch');
  }
  return config;
}

/**
 * The model id a config listing filters on: `referenceModelId`, or `referenceModel` as the official client sends it
 * (`projects/{projectId}/models/{modelId}`, `models/{modelId}` or a plain id). A resource name in another project
 * names nothing the caller may see, so it matches no config ('' is no model id).
 */
function referenceFilter(projectId: string, byId: string | undefined, byName: string | undefined): string | undefined {
  if (byName === undefined) return byId;
  const m = /^projects\/([^/]+)\/models\/(.+)$/.exec(byName) ?? /^()models\/(.+)$/.exec(byName);
  const id = !m ? byName : m[1] && m[1] !== projectId ? '' : m[2]!;
  if (byId !== undefined && byId !== id) {
    throw badRequest(`'referenceModel' (${byName}) and 'referenceModelId' (${byId}) name different models.`, 'referenceModel', 'reference_model_mismatch');
  }
  return id;
}

function checkAutoscaling(a: { minReplicas: number; maxReplicas: number }, param: string): void {
  if (a.minReplicas > a.maxReplicas) throw badRequest("'minReplicas' must not exceed 'maxReplicas'.", param, 'invalid_autoscaling');
}

interface NewDeployment {
  projectId: string;
  endpointId: string;
  name: string;
  model: Model;
  config: ModelConfig;
  minReplicas: number;
  maxReplicas: number;
  trafficMode: string;
  volumes?: string[];
}

/** Creates a deployment (PROVISIONING, or STOPPED at 0/0) and schedules its provisioning, in the caller's transaction. */
async function insertDeployment(tx: Tx, clock: Clock, config: Config, input: NewDeployment): Promise<Deployment> {
  if (await tx.deployment.findFirst({ where: { endpointId: input.endpointId, name: input.name } })) {
    throw conflict(`The endpoint already has a deployment named '${input.name}'.`, 'deployment_name_taken', 'name');
  }
  const now = clock.now();
  const running = desiredReplicas(input) > 0;
  const d = await tx.deployment.create({
    data: {
      id: newId('dep', now),
      projectId: input.projectId,
      endpointId: input.endpointId,
      name: input.name,
      modelId: input.model.id,
      configId: input.config.id,
      minReplicas: input.minReplicas,
      maxReplicas: input.maxReplicas,
      state: running ? PROVISIONING : STOPPED,
      message: running ? 'Provisioning replicas.' : 'Stopped (no replicas requested).',
      trafficMode: input.trafficMode,
      etag: newEtag(),
      createdAt: new Date(now),
      updatedAt: new Date(now),
    },
  });
  // Each ref is looked up on its own so that an unknown one is named by its index.
  for (const [i, ref] of (input.volumes ?? []).entries()) await attachVolumes(tx, input.projectId, d.id, [ref], `volumes.${i}`);
  if (running) await schedule(tx, clock, d, provisionDelay(config));
  await recordDeploymentChange(tx, clock, 'api', null, d);
  return d;
}

async function endpointWire(db: Db | Tx, e: DedicatedEndpoint, slug: string) {
  return wire.v2Endpoint(e, await deploymentsOf(db, e.id), slug);
}

/** The volumes each deployment mounts, by deployment id. */
async function mountsOf(db: Db | Tx, deploymentIds: string[]): Promise<Map<string, string[]>> {
  const mounts = await db.volumeMount.findMany({ where: { deploymentId: { in: deploymentIds } }, orderBy: { volumeId: 'asc' } });
  const out = new Map<string, string[]>(deploymentIds.map((id) => [id, []]));
  for (const m of mounts) out.get(m.deploymentId)!.push(m.volumeId);
  return out;
}

async function deploymentWire(db: Db | Tx, d: Deployment, slug: string) {
  const e = await db.dedicatedEndpoint.findUniqueOrThrow({ where: { id: d.endpointId } });
  return wire.deployment(d, e, await deploymentsOf(db, e.id), slug, (await mountsOf(db, [d.id])).get(d.id)!);
}

/** Thrown out of a write transaction to undo it (validateOnly), carrying the answer computed before the rollback. */
class RolledBack {
  constructor(readonly preview: Awaited<ReturnType<typeof deploymentWire>>) {}
}

/** Stops a deployment's replicas and releases its volumes, before it is deleted. */
async function releaseAll(tx: Tx, clock: Clock, deploymentId: string): Promise<void> {
  await release(tx, clock, DEPLOYMENT_OWNER, deploymentId);
  await detachVolumes(tx, deploymentId);
}

/** A page ordered by id: `after` is the previous page's `next_cursor`. */
function page<T extends { id: string }>(rows: T[], limit: number): { rows: T[]; next: string | null } {
  const more = rows.length > limit;
  const kept = rows.slice(0, limit);
  return { rows: kept, next: more ? kept[kept.length - 1]!.id : null };
}

const isUniqueViolation = (err: unknown) => (err as { code?: string })?.code === 'P2002';

async function createEndpointRow(tx: Tx, clock: Clock, projectId: string, name: string, visibility: string, param: string) {
  await checkNameFree(tx, projectId, name, param);
  const now = clock.now();
  const e = await tx.dedicatedEndpoint.create({
    data: { id: newId('ep', now), projectId, name, visibility, etag: newEtag(), createdAt: new Date(now), updatedAt: new Date(now) },
  });
  await recordEndpointChange(tx, clock, null, e);
  return e;
}

/** Unique-index races (two creates of one name at once) answer the same 409 as the check before them. */
async function uniquely<T>(fn: () => Promise<T>, message: string, code: string, param: string): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(message, code, param);
    throw err;
  }
}

// ---- Routing (used by inference) ----------------------------------------------------------------------------------

const GOLDEN = (Math.sqrt(5) - 1) / 2;

/**
 * Picks the deployment that serves request number `k` of an endpoint: among READY deployments with a positive
 * weight, the one whose cumulative share contains frac(k * golden ratio). Deterministic, and any run of requests
 * follows the weights closely (a low-discrepancy sequence).
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

/** Routes one request to a READY, routed deployment of the endpoint (counting it), or null when none is. */
export async function routeRequest(tx: Tx, endpoint: DedicatedEndpoint): Promise<Deployment | null> {
  const deployments = await deploymentsOf(tx, endpoint.id);
  const ready = new Map(deployments.filter((d) => d.state === READY).map((d) => [d.id, d]));
  const eligible = splitOf(endpoint).filter((s) => s.weight > 0 && ready.has(s.deploymentId));
  if (eligible.length === 0) return null;
  const { routedCount } = await tx.dedicatedEndpoint.update({ where: { id: endpoint.id }, data: { routedCount: { increment: 1 } } });
  return ready.get(pickByWeight(eligible, routedCount))!;
}

// ---- Handlers -----------------------------------------------------------------------------------------------------

type DeployBody = RequestBody<'deployModel'>;

export const dedicatedHandlers = {
  listConfigs: async (ctx) => {
    checkProject(ctx);
    const { db, query } = ctx;
    const limit = query.limit ?? 50;
    const reference = referenceFilter(ctx.identity.projectId, query.referenceModelId, query.referenceModel);
    const rows = await db.prisma.modelConfig.findMany({
      where: {
        OR: [{ projectId: null }, { projectId: ctx.identity.projectId }],
        ...(reference !== undefined ? { referenceModelId: reference } : {}),
        ...(query.after !== undefined ? { id: { gt: query.after } } : {}),
      },
      orderBy: { id: 'asc' },
      take: limit + 1,
    });
    const p = page(rows, limit);
    const data = [];
    for (const c of p.rows) {
      const model = await db.prisma.model.findUnique({ where: { id: c.referenceModelId } });
      data.push(wire.modelConfig(c, await matchingHardware(db.prisma, c, model?.minGpuMemory ?? null)));
    }
    return { object: 'list', data, next_cursor: p.next };
  },

  getConfig: async (ctx) => {
    const projectId = checkProject(ctx);
    const c = await ctx.db.prisma.modelConfig.findFirst({ where: { id: ctx.params.configId, OR: [{ projectId: null }, { projectId }] } });
    if (!c) throw notFound('config', ctx.params.configId, 'configId');
    const model = await ctx.db.prisma.model.findUnique({ where: { id: c.referenceModelId } });
    return wire.modelConfig(c, await matchingHardware(ctx.db.prisma, c, model?.minGpuMemory ?? null));
  },

  deployModel: async (ctx) => {
    const projectId = checkProject(ctx);
    const { db, clock, config, identity } = ctx;
    const body: DeployBody = ctx.body;
    checkAutoscaling(body, 'minReplicas');
    const model = await resolveModel(db.prisma, projectId, body.model, 'model');
    const cfg = await resolveConfig(db.prisma, projectId, body.config, model, 'config');
    const message = `This project already has an endpoint named '${body.endpointName}'.`;
    const { endpoint, deployment, volumes } = await uniquely(
      () =>
        db.write(async (tx) => {
          const endpoint = await createEndpointRow(tx, clock, projectId, body.endpointName, body.visibility ?? 'VISIBILITY_PRIVATE', 'endpointName');
          const deployment = await insertDeployment(tx, clock, config, {
            projectId,
            endpointId: endpoint.id,
            name: body.deploymentName ?? 'primary',
            model,
            config: cfg,
            minReplicas: body.minReplicas,
            maxReplicas: body.maxReplicas,
            trafficMode: 'TRAFFIC_MODE_LIVE',
            volumes: body.volumes,
          });
          const routed = await tx.dedicatedEndpoint.update({
            where: { id: endpoint.id },
            data: { trafficSplit: JSON.stringify([{ deploymentId: deployment.id, weight: 100 }]) },
          });
          return { endpoint: routed, deployment, volumes: (await mountsOf(tx, [deployment.id])).get(deployment.id)! };
        }),
      message,
      'endpoint_name_taken',
      'endpointName',
    );
    return {
      endpoint: wire.v2Endpoint(endpoint, [deployment], identity.projectSlug),
      deployment: wire.deployment(deployment, endpoint, [deployment], identity.projectSlug, volumes),
    };
  },

  listV2Endpoints: async (ctx) => {
    const projectId = checkProject(ctx);
    const limit = ctx.query.limit ?? 50;
    const rows = await ctx.db.prisma.dedicatedEndpoint.findMany({
      where: { projectId, ...(ctx.query.after !== undefined ? { id: { gt: ctx.query.after } } : {}) },
      orderBy: { id: 'asc' },
      take: limit + 1,
    });
    const p = page(rows, limit);
    const data = [];
    for (const e of p.rows) data.push(await endpointWire(ctx.db.prisma, e, ctx.identity.projectSlug));
    return { object: 'list', data, next_cursor: p.next };
  },

  createV2Endpoint: async (ctx) => {
    const projectId = checkProject(ctx);
    const { name, visibility } = ctx.body;
    const e = await uniquely(
      () => ctx.db.write((tx) => createEndpointRow(tx, ctx.clock, projectId, name, visibility ?? 'VISIBILITY_PRIVATE', 'name')),
      `This project already has an endpoint named '${name}'.`,
      'endpoint_name_taken',
      'name',
    );
    return wire.v2Endpoint(e, [], ctx.identity.projectSlug);
  },

  getV2Endpoint: async (ctx) => {
    const projectId = checkProject(ctx);
    return endpointWire(ctx.db.prisma, await findEndpoint(ctx.db.prisma, projectId, ctx.params.endpointId), ctx.identity.projectSlug);
  },

  updateV2Endpoint: async (ctx) => {
    const projectId = checkProject(ctx);
    const { db, clock, identity } = ctx;
    const body = masked(ctx.body, ctx.query.updateMask, ['name', 'trafficSplit', 'visibility']);
    let name: string | undefined;
    if (ctx.body.name !== undefined && body.name !== undefined) {
      const [slug, bare] = body.name.includes('/') ? body.name.split('/') : [identity.projectSlug, body.name];
      if (slug !== identity.projectSlug) throw badRequest(`'${slug}' is not this project's slug.`, 'name', 'invalid_name');
      name = bare;
    }
    const updated = await uniquely(
      () =>
        db.write(async (tx) => {
          const e = await findEndpoint(tx, projectId, ctx.params.endpointId);
          checkEtag(ctx.body.etag, e.etag);
          if (name !== undefined && name !== e.name) await checkNameFree(tx, projectId, name, 'name');
          let split: SplitEntry[] | undefined;
          if (body.trafficSplit !== undefined) {
            const mine = new Set((await deploymentsOf(tx, e.id)).map((d) => d.id));
            const seen = new Set<string>();
            body.trafficSplit.forEach((s, i) => {
              if (!mine.has(s.deploymentId)) {
                throw badRequest(`'${s.deploymentId}' is not a deployment of this endpoint.`, `trafficSplit.${i}.deploymentId`, 'unknown_deployment');
              }
              if (seen.has(s.deploymentId)) {
                throw badRequest(`'${s.deploymentId}' appears twice in the split.`, `trafficSplit.${i}.deploymentId`, 'duplicate_deployment');
              }
              seen.add(s.deploymentId);
            });
            if (body.trafficSplit.length > 0 && !body.trafficSplit.some((s) => s.weight > 0)) {
              throw badRequest('A traffic split needs at least one positive weight (or none at all, to unroute).', 'trafficSplit', 'invalid_traffic_split');
            }
            split = body.trafficSplit.map((s) => ({ deploymentId: s.deploymentId, weight: s.weight }));
          }
          const next = await tx.dedicatedEndpoint.update({
            where: { id: e.id },
            data: {
              name: name ?? e.name,
              visibility: body.visibility ?? e.visibility,
              trafficSplit: split ? JSON.stringify(split) : e.trafficSplit,
              etag: newEtag(),
              updatedAt: new Date(clock.now()),
            },
          });
          await recordEndpointChange(tx, clock, e, next);
          return next;
        }),
      `This project already has an endpoint named '${name}'.`,
      'endpoint_name_taken',
      'name',
    );
    return endpointWire(db.prisma, updated, identity.projectSlug);
  },

  deleteV2Endpoint: async (ctx) => {
    const projectId = checkProject(ctx);
    await ctx.db.write(async (tx) => {
      const e = await findEndpoint(tx, projectId, ctx.params.endpointId);
      checkEtag(ctx.query.etag, e.etag);
      for (const d of await deploymentsOf(tx, e.id)) await releaseAll(tx, ctx.clock, d.id);
      await tx.deployment.deleteMany({ where: { endpointId: e.id } });
      await tx.endpointEvent.deleteMany({ where: { endpointId: e.id } });
      await tx.dedicatedEndpoint.delete({ where: { id: e.id } });
    });
    return {};
  },

  getV2EndpointUsage: async (ctx) => {
    const projectId = checkProject(ctx);
    const { db, clock } = ctx;
    const e = await findEndpoint(db.prisma, projectId, ctx.params.endpointId);
    const deployments: ReturnType<typeof wire.deploymentUsage>[] = [];
    for (const d of await deploymentsOf(db.prisma, e.id)) {
      const running = await db.prisma.hardwareReservation.count({ where: { ownerKind: DEPLOYMENT_OWNER, ownerId: d.id, endedAt: null } });
      deployments.push(wire.deploymentUsage(d, running, await usage(db.prisma, clock, DEPLOYMENT_OWNER, d.id)));
    }
    const sum = (f: (u: (typeof deployments)[number]) => number) => deployments.reduce((s, u) => s + f(u), 0);
    return {
      endpointId: e.id,
      runningReplicas: sum((u) => u.runningReplicas),
      replicaMinutes: sum((u) => u.replicaMinutes),
      costCents: Math.round(sum((u) => u.costCents) * 100) / 100,
      deployments,
    };
  },

  listV2EndpointEvents: async (ctx) => {
    const projectId = checkProject(ctx);
    const { db, query } = ctx;
    const e = await findEndpoint(db.prisma, projectId, ctx.params.endpointId);
    let afterSeq = 0;
    if (query.after !== undefined) {
      const cursor = await db.prisma.endpointEvent.findFirst({ where: { id: query.after, endpointId: e.id } });
      if (!cursor) throw badRequest(`'${query.after}' is not a cursor of this endpoint's events.`, 'after', 'invalid_cursor');
      afterSeq = cursor.seq;
    }
    const limit = query.limit ?? 50;
    const rows = await db.prisma.endpointEvent.findMany({ where: { endpointId: e.id, seq: { gt: afterSeq } }, orderBy: { seq: 'asc' }, take: limit + 1 });
    const p = page(rows, limit);
    return { object: 'list', data: p.rows.map((v) => wire.endpointEvent(v, ctx.identity.projectSlug)), next_cursor: p.next };
  },

  listDeployments: async (ctx) => {
    const projectId = checkProject(ctx);
    const e = await findEndpoint(ctx.db.prisma, projectId, ctx.params.endpointId);
    const limit = ctx.query.limit ?? 50;
    const all = await deploymentsOf(ctx.db.prisma, e.id);
    const after = ctx.query.after;
    const p = page(after === undefined ? all : all.filter((d) => d.id > after), limit);
    const mounts = await mountsOf(ctx.db.prisma, p.rows.map((d) => d.id));
    return { object: 'list', data: p.rows.map((d) => wire.deployment(d, e, all, ctx.identity.projectSlug, mounts.get(d.id)!)), next_cursor: p.next };
  },

  createDeployment: async (ctx) => {
    const projectId = checkProject(ctx);
    const { db, clock, config, body } = ctx;
    await findEndpoint(db.prisma, projectId, ctx.params.endpointId);
    const autoscaling = { minReplicas: body.autoscaling.minReplicas, maxReplicas: body.autoscaling.maxReplicas ?? body.autoscaling.minReplicas };
    checkAutoscaling(autoscaling, 'autoscaling.minReplicas');
    const model = await resolveModel(db.prisma, projectId, body.model, 'model');
    const cfg = await resolveConfig(db.prisma, projectId, body.config, model, 'config');
    const created = await uniquely(
      () =>
        db.write(async (tx) => {
          const e = await findEndpoint(tx, projectId, ctx.params.endpointId);
          const d = await insertDeployment(tx, clock, config, {
            projectId,
            endpointId: e.id,
            name: body.name,
            model,
            config: cfg,
            ...autoscaling,
            trafficMode: body.trafficMode ?? 'TRAFFIC_MODE_LIVE',
            volumes: body.volumes,
          });
          // validateOnly runs the very same checks and writes, then rolls them back: the answer is the preview.
          if (ctx.query.validateOnly) throw new RolledBack(await deploymentWire(tx, d, ctx.identity.projectSlug));
          return d;
        }),
      `The endpoint already has a deployment named '${body.name}'.`,
      'deployment_name_taken',
      'name',
    ).catch((err: unknown) => {
      if (err instanceof RolledBack) return err;
      throw err;
    });
    if (created instanceof RolledBack) return created.preview;
    return deploymentWire(db.prisma, created, ctx.identity.projectSlug);
  },

  getDeployment: async (ctx) => {
    const projectId = checkProject(ctx);
    const d = await findDeployment(ctx.db.prisma, projectId, ctx.params.endpointId, ctx.params.deploymentId);
    return deploymentWire(ctx.db.prisma, d, ctx.identity.projectSlug);
  },

  updateDeployment: async (ctx) => {
    const projectId = checkProject(ctx);
    const { db, clock, config } = ctx;
    const body = masked(ctx.body, ctx.query.updateMask, ['name', 'autoscaling']);
    const updated = await uniquely(
      () =>
        db.write(async (tx) => {
          const d = await findDeployment(tx, projectId, ctx.params.endpointId, ctx.params.deploymentId);
          checkEtag(ctx.body.etag, d.etag);
          if (body.name !== undefined && body.name !== d.name && (await tx.deployment.findFirst({ where: { endpointId: d.endpointId, name: body.name } }))) {
            throw conflict(`The endpoint already has a deployment named '${body.name}'.`, 'deployment_name_taken', 'name');
          }
          const now = new Date(clock.now());
          const data: Partial<Deployment> = { name: body.name ?? d.name, etag: newEtag(), updatedAt: now };
          if (body.autoscaling) {
            // An omitted bound keeps its current value (the official client's contract).
            const wanted = { minReplicas: body.autoscaling.minReplicas ?? d.minReplicas, maxReplicas: body.autoscaling.maxReplicas ?? d.maxReplicas };
            checkAutoscaling(wanted, 'autoscaling.minReplicas');
            Object.assign(data, wanted);
            const replicas = desiredReplicas(wanted);
            if (replicas === 0) {
              const to = deploymentTransition(d.state, 'stop');
              Object.assign(data, { state: to, epoch: d.epoch + 1, message: to === STOPPED ? 'Stopped.' : 'Stopping replicas.' });
              if (to === STOPPED) Object.assign(data, { readyReplicas: 0 });
            } else if (d.state === STOPPED || d.state === FAILED || d.state === STOPPING) {
              const to = deploymentTransition(d.state, 'start');
              Object.assign(data, { state: to, epoch: d.epoch + 1, hardwareId: null, readyReplicas: 0, message: 'Provisioning replicas.' });
            } else if (d.state === READY) {
              // Resized in place on its hardware; growing needs free GPUs there.
              const delta = replicas - desiredReplicas(d);
              const grown = { projectId, hardwareId: d.hardwareId!, replicas: delta, ownerKind: DEPLOYMENT_OWNER, ownerId: d.id } as const;
              if (delta > 0 && !(await reserveIfFree(tx, clock, grown))) {
                throw apiError(409, 'insufficient_capacity', `Not enough free ${d.hardwareId} capacity for ${delta} more replica(s).`, 'autoscaling.minReplicas');
              }
              if (delta < 0) await release(tx, clock, DEPLOYMENT_OWNER, d.id, -delta);
              Object.assign(data, { readyReplicas: replicas, message: `${replicas} replica(s) ready on ${d.hardwareId}.` });
            }
          }
          const next = await tx.deployment.update({ where: { id: d.id }, data });
          await recordDeploymentChange(tx, clock, 'api', d, next);
          if (next.state === PROVISIONING && next.epoch !== d.epoch) await schedule(tx, clock, next, provisionDelay(config));
          if (next.state === STOPPING && next.epoch !== d.epoch) await schedule(tx, clock, next, stopDelay(config));
          return next;
        }),
      `The endpoint already has a deployment named '${body.name}'.`,
      'deployment_name_taken',
      'name',
    );
    return deploymentWire(db.prisma, updated, ctx.identity.projectSlug);
  },

  deleteDeployment: async (ctx) => {
    const projectId = checkProject(ctx);
    await ctx.db.write(async (tx) => {
      const d = await findDeployment(tx, projectId, ctx.params.endpointId, ctx.params.deploymentId);
      checkEtag(ctx.query.etag, d.etag);
      const e = await tx.dedicatedEndpoint.findUniqueOrThrow({ where: { id: d.endpointId } });
      const split = splitOf(e);
      if (split.some((s) => s.deploymentId === d.id && s.weight > 0)) {
        throw conflict(`Deployment '${d.id}' still receives traffic; route the endpoint's traffic elsewhere first.`, 'deployment_receives_traffic', 'deploymentId');
      }
      if (split.some((s) => s.deploymentId === d.id)) {
        const next = await tx.dedicatedEndpoint.update({
          where: { id: e.id },
          data: { trafficSplit: JSON.stringify(split.filter((s) => s.deploymentId !== d.id)), etag: newEtag(), updatedAt: new Date(ctx.clock.now()) },
        });
        await recordEndpointChange(tx, ctx.clock, e, next);
      }
      await releaseAll(tx, ctx.clock, d.id);
      await tx.deployment.delete({ where: { id: d.id } });
      await recordDeploymentChange(tx, ctx.clock, 'api', d, null);
    });
    return {};
  },
} satisfies ModuleHandlers;
