// How v2 requests name things: the project in the path (it must be the caller's), endpoints and deployments by
// id, names (bare, or qualified by the project's slug), models and configs by id or by resource name
// (`projects/{projectId}/models/{id}[/revisions/{revisionId}]`, `models/{id}`, `projects/{projectId}/configs/{id}`)
// or by the public platform's deprecated id aliases, and the rules a named model, config, autoscaling policy or
// placement must meet to be deployed.
import { createHash } from 'node:crypto';
import type { DedicatedEndpoint, Deployment, Model, ModelConfig } from '../../../generated/prisma/sqlite/client/client.ts';
import { badRequest, taken } from '../../core/errors.ts';
import type { Db, Tx } from '../../db/index.ts';
import { checkNameCharacters } from '../../http/input.ts';
import { owned, visibleOrNull } from '../../http/scope.ts';
import { catalogueRevision, isCatalogueModel } from '../model-catalogue/index.ts';
import { canonicalModelId } from '../models/index.ts';

export { checkProject } from '../../http/scope.ts';

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

/** Longest name, in characters (the contract's `EndpointName`): names are held in unique indexes, whose entries PostgreSQL bounds. */
export const MAX_NAME_LENGTH = 100;

/** A name is any non-empty string without `/` or `:`: those delimit `<project_slug>/<endpoint>[/<deployment>][:<adapter>]`. */
export function checkName(name: string, param: string): string {
  checkNameCharacters(name, param);
  if (name === '' || /[/:]/.test(name)) {
    throw badRequest(`'${name}' is not a name: a name is a non-empty string without '/' or ':' (they delimit inference addresses).`, param, 'invalid_name');
  }
  // Counted in characters (code points), as the contract's maxLength counts them. A qualified name reaches here
  // with only its slug checked by the contract's longer bound.
  if ([...name].length > MAX_NAME_LENGTH) throw badRequest(`'${param}' must be a name of at most ${MAX_NAME_LENGTH} characters.`, param, 'maxLength');
  return name;
}

/** The bare endpoint name of `value`, given bare or as `<project_slug>/<name>` with the project's own slug. */
export function endpointNameOf(projectSlug: string, value: string, param: string): string {
  const slash = value.indexOf('/');
  if (slash < 0) return checkName(value, param);
  const slug = value.slice(0, slash);
  if (slug !== projectSlug) throw badRequest(`'${slug}' is not this project's slug ('${projectSlug}').`, param, 'invalid_name');
  return checkName(value.slice(slash + 1), param);
}

/** Every model here has exactly one revision (a model never changes once it exists); this is its id. */
export const revisionOf = (modelId: string) => `rev_${createHash('sha256').update(modelId).digest('hex').slice(0, 16)}`;

/**
 * The model id (and revision, if named) a reference names: a plain id, `models/{id}` or
 * `projects/{projectId}/models/{id}`, each optionally followed by `/revisions/{revisionId}`. The id is '' when the
 * reference names another project's model (which matches nothing the caller may see).
 */
export function parseModelRef(projectId: string, ref: string): { id: string; revision?: string } {
  const rev = /^(.+)\/revisions\/([^/]+)$/.exec(ref);
  const base = rev ? rev[1]! : ref;
  const m = /^projects\/([^/]+)\/models\/(.+)$/.exec(base) ?? /^()models\/(.+)$/.exec(base);
  const id = !m ? canonicalModelId(base) : m[1] && m[1] !== projectId ? '' : canonicalModelId(m[2]!);
  return rev ? { id, revision: rev[2]! } : { id };
}

/** The config id a reference names (`cr_...` or `projects/{projectId}/configs/{id}`); '' for another project's. */
function configIdOf(projectId: string, ref: string): string {
  const m = /^projects\/([^/]+)\/configs\/(.+)$/.exec(ref);
  return !m ? ref : m[1] !== projectId ? '' : m[2]!;
}

/** The deployable model a body's `model` names: a catalogue model deployable on dedicated hardware, or a ready upload that fine-tunes one. */
export async function resolveModel(db: Db | Tx, projectId: string, ref: string, param: string): Promise<Model> {
  const { id } = parseModelRef(projectId, ref);
  const model = id === '' ? null : await visibleOrNull(db.model, projectId, { id });
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
    throw badRequest(
      `Model '${id}' is not a fine-tuned variant of a base architecture this platform serves on dedicated hardware.`,
      param,
      'unsupported_architecture',
    );
  }
  return model;
}

/** Whether `config` serves `model`: published for it, or for a model (`reference`, the config's) of its architecture. */
export const configServes = (config: ModelConfig, reference: Model | null | undefined, model: Model): boolean =>
  config.referenceModelId === model.id || (!!reference?.architecture && reference.architecture === model.architecture);

/** The published config a body's `config` names; it must be for the model's architecture. */
export async function resolveConfig(db: Db | Tx, projectId: string, ref: string, model: Model, param: string): Promise<ModelConfig> {
  const id = configIdOf(projectId, ref);
  const config = id === '' ? null : await visibleOrNull(db.modelConfig, projectId, { id });
  if (!config) throw badRequest(`No published config '${ref}' exists.`, param, 'config_not_found');
  const reference = await db.model.findUnique({ where: { id: config.referenceModelId } });
  if (!configServes(config, reference, model)) {
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
  const { id } = parseModelRef(projectId, byName);
  if (byId !== undefined && canonicalModelId(byId) !== id) {
    throw badRequest(`'referenceModel' (${byName}) and 'referenceModelId' (${byId}) name different models.`, 'referenceModel', 'reference_model_mismatch');
  }
  return id;
}

/**
 * A field and its deprecated alias (`model`/`modelId`, `config`/`configId`): a deployment needs one of them, and
 * given both they must name the same thing. Answers the reference to use and the field it came from.
 */
function eitherOf(what: string, main: [string, string | undefined], alias: [string, string | undefined], same: (a: string, b: string) => boolean) {
  const [mainField, mainRef] = main;
  const [aliasField, aliasRef] = alias;
  if (mainRef === undefined && aliasRef === undefined) {
    throw badRequest(`A deployment needs a ${what}: give '${mainField}' (or the deprecated '${aliasField}').`, mainField, 'required');
  }
  if (mainRef !== undefined && aliasRef !== undefined && !same(mainRef, aliasRef)) {
    throw badRequest(`'${mainField}' (${mainRef}) and '${aliasField}' (${aliasRef}) name different ${what}s.`, aliasField, `${what}_mismatch`);
  }
  return mainRef !== undefined ? { ref: mainRef, param: mainField } : { ref: aliasRef!, param: aliasField };
}

export interface ModelAndConfigRefs {
  model?: string;
  modelId?: string;
  modelRevisionId?: string;
  config?: string;
  configId?: string;
}

/** The model (at its one revision) and the config a create names, by resource name or by the deprecated aliases. */
export async function resolveModelAndConfig(db: Db | Tx, projectId: string, refs: ModelAndConfigRefs) {
  const m = eitherOf('model', ['model', refs.model], ['modelId', refs.modelId], (a, b) => parseModelRef(projectId, a).id === parseModelRef(projectId, b).id);
  const model = await resolveModel(db, projectId, m.ref, m.param);
  const named: [string, string | undefined][] = [
    ['model', refs.model === undefined ? undefined : parseModelRef(projectId, refs.model).revision],
    ['modelId', refs.modelId === undefined ? undefined : parseModelRef(projectId, refs.modelId).revision],
    ['modelRevisionId', refs.modelRevisionId],
  ];
  const modelRevisionId = await revisionToPin(db, model, named);
  const c = eitherOf('config', ['config', refs.config], ['configId', refs.configId], (a, b) => configIdOf(projectId, a) === configIdOf(projectId, b));
  const config = await resolveConfig(db, projectId, c.ref, model, c.param);
  return { model, modelRevisionId, config };
}

/**
 * The revision a deployment pins: a v2 catalogue model's named revision (each name given must be one of its
 * revisions, and all the same) or its newest; any other model's one revision (`revisionOf`), which a name must be.
 */
async function revisionToPin(db: Db | Tx, model: Model, named: [string, string | undefined][]): Promise<string> {
  const given = named.filter((n): n is [string, string] => n[1] !== undefined);
  if (!isCatalogueModel(model)) {
    const only = revisionOf(model.id);
    for (const [param, revision] of given) {
      if (revision !== only)
        throw badRequest(`Model '${model.id}' has no revision '${revision}'; its one revision is '${only}'.`, param, 'model_revision_not_found');
    }
    return only;
  }
  let pinned: string | undefined;
  for (const [param, revision] of given) {
    if ((await catalogueRevision(db, model, revision)) === null)
      throw badRequest(`Model '${model.id}' has no revision '${revision}'.`, param, 'model_revision_not_found');
    if (pinned !== undefined && pinned !== revision)
      throw badRequest(`'${param}' names revision '${revision}', another field '${pinned}'.`, param, 'model_revision_mismatch');
    pinned = revision;
  }
  // A ready catalogue model has a revision: its first succeeded upload made it ready.
  return pinned ?? (await catalogueRevision(db, model))!;
}

/** A create's replica bounds: `minReplicas` 1 when omitted (0 when `maxReplicas` is 0), `maxReplicas` `minReplicas` when omitted. */
export function createBounds(a: { minReplicas?: number; maxReplicas?: number }) {
  const minReplicas = a.minReplicas ?? (a.maxReplicas === 0 ? 0 : 1);
  return { minReplicas, maxReplicas: a.maxReplicas ?? minReplicas };
}

/** Replica bounds are not negative and in order; `prefix` is where the bounds sit in the body (`autoscaling.` or ''). */
export function checkAutoscaling(a: { minReplicas: number; maxReplicas: number }, prefix: string): void {
  for (const bound of ['minReplicas', 'maxReplicas'] as const) {
    if (a[bound] < 0) throw badRequest(`'${bound}' must not be negative.`, `${prefix}${bound}`, 'invalid_autoscaling');
  }
  if (a.minReplicas > a.maxReplicas) throw badRequest("'minReplicas' must not exceed 'maxReplicas'.", `${prefix}minReplicas`, 'invalid_autoscaling');
}
