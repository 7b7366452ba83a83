// How v2 requests name things: the project in the path (it must be the caller's), endpoints and deployments by
// id, models and configs by id or by resource name (`projects/{projectId}/models/{id}`, `models/{id}`,
// `projects/{projectId}/configs/{id}`), and the rules a named model or config must meet to be deployed.
import type { DedicatedEndpoint, Deployment, Model, ModelConfig } from '../../../generated/prisma/sqlite/client/client.ts';
import { badRequest, notFound, taken } from '../../core/errors.ts';
import type { Db, Tx } from '../../db/index.ts';
import { owned, visibleOrNull } from '../../http/scope.ts';
import { canonicalModelId } from '../models/catalogue.ts';

/** `{projectId}` must be the caller's: any other answers exactly like an absent resource. */
export function checkProject(ctx: { params: { projectId: string }; identity: { projectId: string } }): string {
  if (ctx.params.projectId !== ctx.identity.projectId) throw notFound('project', ctx.params.projectId, 'projectId');
  return ctx.identity.projectId;
}

export function findEndpoint(db: Db | Tx, projectId: string, id: string): Promise<DedicatedEndpoint> {
  return owned(db.dedicatedEndpoint, projectId, { id }, { what: 'endpoint', id, param: 'endpointId' });
}

export function findDeployment(db: Db | Tx, projectId: string, endpointId: string, id: string): Promise<Deployment> {
  return owned(db.deployment, projectId, { id, endpointId }, { what: 'deployment', id, param: 'deploymentId' });
}

export const deploymentsOf = (db: Db | Tx, endpointId: string) => db.deployment.findMany({ where: { endpointId }, orderBy: { id: 'asc' } });

export const endpointNameTaken = (name: string, param: string) => taken(`This project already has an endpoint named '${name}'.`, 'endpoint_name_taken', param);
export const deploymentNameTaken = (name: string) => taken(`The endpoint already has a deployment named '${name}'.`, 'deployment_name_taken', 'name');

/** Endpoint names are unique per project across both generations: both are addressed as `<slug>/<name>`. */
export async function checkNameFree(tx: Tx, projectId: string, name: string, param: string): Promise<void> {
  const [v1, v2] = await Promise.all([tx.v1Endpoint.findFirst({ where: { projectId, name } }), tx.dedicatedEndpoint.findFirst({ where: { projectId, name } })]);
  if (v1 || v2) throw endpointNameTaken(name, param);
}

/**
 * The model id a reference names (an alias read as its canonical id), or '' when it names another project's (which
 * matches nothing the caller may see).
 */
function modelIdOf(projectId: string, ref: string): string {
  const m = /^projects\/([^/]+)\/models\/(.+)$/.exec(ref) ?? /^()models\/(.+)$/.exec(ref);
  if (!m) return canonicalModelId(ref);
  return m[1] && m[1] !== projectId ? '' : canonicalModelId(m[2]!);
}

/** The deployable model a body's `model` names: a catalogue model deployable on dedicated hardware, or a ready upload that fine-tunes one. */
export async function resolveModel(db: Db | Tx, projectId: string, ref: string, param: string): Promise<Model> {
  const id = modelIdOf(projectId, ref);
  const model = id === '' ? null : await visibleOrNull(db.model, projectId, { id });
  if (!model) throw badRequest(`No model '${ref}' exists in the catalogue or this project.`, param, 'model_not_found');
  if (model.projectId === null) {
    if (model.minGpuMemory === null) throw badRequest(`Model '${id}' is served serverless only and cannot be deployed.`, param, 'model_not_deployable');
    return model;
  }
  if (model.modelType === 'adapter') throw badRequest(`'${id}' is an adapter; bind it to an endpoint of its base model instead.`, param, 'model_is_adapter');
  if (model.status !== 'ready') throw badRequest(`Model '${id}' has not finished uploading (status ${model.status}).`, param, 'model_not_ready');
  const base = model.architecture ? await db.model.findFirst({ where: { projectId: null, architecture: model.architecture, minGpuMemory: { not: null } } }) : null;
  if (!base || model.minGpuMemory === null) {
    throw badRequest(`Model '${id}' is not a fine-tuned variant of a base architecture this platform serves on dedicated hardware.`, param, 'unsupported_architecture');
  }
  return model;
}

/** The published config a body's `config` names; it must be for the model's architecture. */
export async function resolveConfig(db: Db | Tx, projectId: string, ref: string, model: Model, param: string): Promise<ModelConfig> {
  const m = /^projects\/([^/]+)\/configs\/(.+)$/.exec(ref);
  const id = m ? m[2]! : ref;
  const config = m && m[1] !== projectId ? null : await visibleOrNull(db.modelConfig, projectId, { id });
  if (!config) throw badRequest(`No published config '${ref}' exists.`, param, 'config_not_found');
  const reference = await db.model.findUnique({ where: { id: config.referenceModelId } });
  if (config.referenceModelId !== model.id && (!reference?.architecture || reference.architecture !== model.architecture)) {
    throw badRequest(`Config '${id}' is published for ${config.referenceModelId}, not for ${model.id}'s architecture.`, param, 'config_model_mismatch');
  }
  return config;
}

/**
 * The model id a config listing filters on: `referenceModelId`, or `referenceModel` as the official client sends it
 * (`projects/{projectId}/models/{modelId}`, `models/{modelId}` or a plain id).
 */
export function referenceFilter(projectId: string, byId: string | undefined, byName: string | undefined): string | undefined {
  if (byName === undefined) return byId === undefined ? undefined : canonicalModelId(byId);
  const id = modelIdOf(projectId, byName);
  if (byId !== undefined && canonicalModelId(byId) !== id) {
    throw badRequest(`'referenceModel' (${byName}) and 'referenceModelId' (${byId}) name different models.`, 'referenceModel', 'reference_model_mismatch');
  }
  return id;
}

export function checkAutoscaling(a: { minReplicas: number; maxReplicas: number }, param: string): void {
  if (a.minReplicas > a.maxReplicas) throw badRequest("'minReplicas' must not exceed 'maxReplicas'.", param, 'invalid_autoscaling');
}
