// The catalogue's rules (the tag's **Base architectures**, **Names**, **Uploads**): a v2 model fine-tunes a served
// base architecture, named by `baseModelId`; an upload's source must name that same architecture; names are not
// blank and are unique among the project's models (v1 and v2 share them).
import type { Model } from '../../../generated/prisma/sqlite/client/client.ts';
import { badRequest, notFound, taken } from '../../core/errors.ts';
import type { Db, Tx } from '../../db/index.ts';
import { checkNameCharacters } from '../../http/input.ts';
import { owned } from '../../http/scope.ts';
import { architectureOf, canonicalModelId, catalogueModel, nameKey, parseSource, type Source } from '../models/index.ts';

/** `organizationId` (path or query) must be the caller's organization. */
export function checkOrganization(given: string, identity: { organizationId: string }, param: string): void {
  if (given !== identity.organizationId) throw notFound('organization', given, param);
}

/** The caller's v2 model `id`: 404 naming `param` otherwise (a v1 upload's id included: the v2 catalogue does not hold it). */
export function findCatalogueModel(db: Db | Tx, projectId: string, id: string, param = 'modelId'): Promise<Model> {
  return owned(db.model, projectId, { id, visibility: { not: null } }, { what: 'model', id, param });
}

/** The served catalogue model a create names as its base: dedicated hardware runs it and its architecture is known. */
export async function servedBase(db: Db, ref: string): Promise<Model> {
  const id = canonicalModelId(ref.startsWith('models/') ? ref.slice('models/'.length) : ref);
  const base = await catalogueModel(db, id);
  if (!base) throw badRequest(`No model '${ref}' is in the platform's catalogue.`, 'baseModelId', 'base_model_not_found');
  if (base.architecture === null || base.minGpuMemory === null) {
    const why = base.architecture === null ? 'of no known base architecture' : 'served serverless only';
    throw badRequest(
      `A v2 model must be a fine-tuned variant of a base architecture this platform serves on dedicated hardware; '${ref}' is ${why}.`,
      'baseModelId',
      'unsupported_base_architecture',
    );
  }
  return base;
}

/** `type`: full weights only (v2 adapters are bound on deployments, not served here). */
export function checkWeightsType(type: string): void {
  if (type !== 'model' && type !== 'WEIGHTS_TYPE_DEFAULT') {
    throw badRequest(
      `'${type}' is not a model type this catalogue creates: 'model' (or 'WEIGHTS_TYPE_DEFAULT'), full weights. Adapters and speculators are not created here.`,
      'type',
      'unsupported_model_type',
    );
  }
}

export function checkName(name: string, param = 'name'): string {
  checkNameCharacters(name, param);
  if (name.trim() === '') throw badRequest(`'${param}' must name the model: it is empty or only spaces.`, param, 'invalid_model_name');
  return name;
}

export const nameTaken = (name: string) => taken(`This project already has a model named '${name}'.`, 'model_name_taken', 'name');

/** Names are unique among the project's models, v1 and v2 (`except`: the model being renamed). */
export async function checkNameFree(tx: Tx, projectId: string, name: string, except?: string): Promise<void> {
  const holder = await tx.model.findFirst({ where: { projectId, nameKey: nameKey(name) } });
  if (holder && holder.id !== except) throw nameTaken(name);
}

/** An upload's source: it parses, and its name says it is the model's base architecture. */
export async function checkSource(db: Db | Tx, model: Model, remoteUrl: string): Promise<Source> {
  const source = parseSource(remoteUrl);
  if (typeof source === 'string') {
    throw badRequest(`'remoteUrl' is not a model hub repository or an object-storage path: ${source}.`, 'remoteUrl', 'invalid_model_source');
  }
  const served = await db.model.findMany({ where: { projectId: null, architecture: { not: null }, minGpuMemory: { not: null } } });
  const architectures = [...new Set(served.map((m) => m.architecture!))].sort();
  const architecture = architectureOf(source, architectures);
  if (!architecture) {
    throw badRequest(
      `A v2 upload must be a fine-tuned variant of a base architecture this platform serves, named in the source (one of: ${architectures.join(', ')}); '${remoteUrl}' names none.`,
      'remoteUrl',
      'unsupported_base_architecture',
    );
  }
  if (architecture !== model.architecture) {
    throw badRequest(
      `'${remoteUrl}' is ${architecture}, but model '${model.id}' fine-tunes ${model.architecture} (its base ${model.baseModelId}).`,
      'remoteUrl',
      'base_model_mismatch',
    );
  }
  return source;
}
