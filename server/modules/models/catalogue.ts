// The model catalogue: the platform's models (no project; seed.json) and each project's uploads. Other modules look
// models up here: by id through `canonicalModelId` (an alias answers as its canonical model), and tell an upload's id
// from a catalogue id with `isUploadedModelId`.
import { createHash } from 'node:crypto';
import type { Model } from '../../../generated/prisma/sqlite/client/client.ts';
import { type Clock, instant } from '../../core/clock.ts';
import { apiError, badRequest, withArticle } from '../../core/errors.ts';
import { newId } from '../../core/ids.ts';
import { type Db, insertRows, type Tx } from '../../db/index.ts';
import type { SeedContext } from '../types.ts';
import data from './seed.json' with { type: 'json' };

/** The platform's catalogue (seed.json); its rows have no project. */
export async function seedCatalogue({ tx, clock }: SeedContext): Promise<void> {
  // One statement for the whole catalogue: a statement each was a tenth of a first start.
  await insertRows(
    tx,
    'Model',
    (data.models as CatalogueEntry[]).map((m) => ({
      id: m.id,
      projectId: null,
      name: m.id,
      type: m.type,
      modelType: 'model',
      architecture: m.architecture ?? null,
      serverless: m.serverless,
      minGpuMemory: m.minGpuMemory ?? null,
      contextLength: m.contextLength ?? null,
      dimensions: m.dimensions ?? null,
      organization: m.organization ?? null,
      displayName: m.displayName ?? null,
      license: m.license ?? null,
      link: m.link ?? null,
      capabilities: JSON.stringify(m.capabilities ?? []),
      pricing: JSON.stringify(m.pricing ?? {}),
      description: m.description ?? null,
      status: 'ready',
      createdAt: instant(clock),
    })),
  );
}

interface CatalogueEntry {
  id: string;
  displayName?: string;
  organization?: string;
  type: string;
  architecture?: string;
  serverless: boolean;
  minGpuMemory?: number;
  contextLength?: number;
  dimensions?: number;
  license?: string;
  link?: string;
  capabilities?: string[];
  /** Absent when the model is not priced per token or per hour (or its price is not known). */
  pricing?: Record<string, number>;
  description?: string;
  /** A speech model's voices (`GET /v1/voices`). */
  voices?: SpeechVoice[];
}

/** A voice of a speech model: its name (what `voice` takes), and what the local engine speaks it with. */
export interface SpeechVoice {
  name: string;
  gender: 'female' | 'male';
  /** A language code of the voice's own language (`en-us`, `fr`...). */
  language: string;
}

/** Each catalogue speech model's voices, in catalogue order (static: voices are the platform's, not a project's). */
export const speechVoices = (): ReadonlyMap<string, readonly SpeechVoice[]> =>
  new Map((data.models as CatalogueEntry[]).filter((m) => m.voices).map((m) => [m.id, m.voices!]));

/** Other ids of catalogue models (seed.json `aliases`): each answers as its canonical model wherever an id is read. */
const ALIASES = new Map<string, string>(Object.entries(data.aliases));

/** The id a model is stored under: the canonical id for an alias, any other id unchanged. */
export const canonicalModelId = (id: string): string => ALIASES.get(id) ?? id;

/**
 * Whether `id` is a project's own model (an upload, or a fine-tuning job's output) rather than a catalogue model:
 * `ml_...`, the one form of model ids (the requirements': model ids start `ml_`). Catalogue ids are `<org>/<name>`.
 */
export const isUploadedModelId = (id: string): boolean => id.startsWith('ml_');

/**
 * A model the project can use: a catalogue model (by its id or an alias; from memory, see `catalogueModel`), or one
 * of its own completed uploads (`ml_...`, the only ids a project's models have).
 */
export async function findModel(db: Db | Tx, projectId: string, id: string): Promise<Model | null> {
  if (isUploadedModelId(id)) return db.model.findFirst({ where: { id, projectId, status: 'ready' } });
  return (await catalogueModel(db, id)) ?? null;
}

export const capabilities = (m: Model): string[] => JSON.parse(m.capabilities);

/** The public platform's model types: what its clients accept as a model's `type`. */
export type PublicType = 'chat' | 'language' | 'code' | 'image' | 'embedding' | 'moderation' | 'rerank';

/**
 * A model's `type` on the wire: its kind when the platform's seven types name it; otherwise the nearest of them.
 * Audio models (speech in or out: transcription, speech synthesis) are `language`; video generation is `image`
 * (visual generation). The kind itself is answered as `kind`.
 */
export function publicType(kind: string): PublicType {
  switch (kind) {
    case 'chat':
    case 'language':
    case 'code':
    case 'image':
    case 'embedding':
    case 'moderation':
    case 'rerank':
      return kind;
    case 'video':
      return 'image';
    default:
      return 'language';
  }
}

/** The key the unique index holds for an upload's name (any length): its sha256, in hex. */
export const nameKey = (name: string): string => createHash('sha256').update(name).digest('hex');

export interface UploadedModel {
  name: string;
  type: string;
  modelType: 'model' | 'adapter';
  architecture: string | null;
  baseModelId: string | null;
  loraModel?: string | null;
  minGpuMemory: number | null;
  contextLength?: number | null;
  description?: string | null;
  /** Where the weights come from; null for a v2 catalogue model, whose uploads each name their own. */
  source: string | null;
  sourceKind: string | null;
  /** pending while its upload job runs (a v2 model: until an upload succeeds); ready once it completed. */
  status: 'pending' | 'ready';
  /** v2 catalogue models only: VISIBILITY_PRIVATE | VISIBILITY_INTERNAL. */
  visibility?: string | null;
}

/** A project's model or adapter (`ml_...`: v1 uploads, fine-tuned outputs, v2 catalogue models), created pending or ready. */
export function createUploadedModel(tx: Tx, clock: Clock, projectId: string, m: UploadedModel): Promise<Model> {
  return tx.model.create({
    data: {
      id: newId('ml', clock.now()),
      projectId,
      ...m,
      nameKey: nameKey(m.name),
      loraModel: m.loraModel ?? null,
      contextLength: m.contextLength ?? null,
      description: m.description ?? null,
      createdAt: instant(clock),
    },
  });
}

// The catalogue's rows are written only when it is seeded (a start, before the app serves), so they are read from
// memory, once per database client: the lookup was a query per request on the hottest paths (inference, queue
// submits). A transaction's client is new each time: it reads the one row it needs instead.
const catalogues = new WeakMap<Db, Promise<Map<string, Model>>>();

const isTransaction = (db: Db | Tx): db is Tx => !('$transaction' in db);

/** The platform catalogue's model with this id or alias, if any. */
export async function catalogueModel(db: Db | Tx, id: string): Promise<Model | undefined> {
  const canonical = canonicalModelId(id);
  if (isTransaction(db)) return (await db.model.findFirst({ where: { id: canonical, projectId: null } })) ?? undefined;
  return (await catalogueModels(db)).get(canonical);
}

/** Every model of the platform's catalogue (no uploads), in id order (by code point, as on both databases). */
export async function catalogue(db: Db): Promise<Model[]> {
  return [...(await catalogueModels(db)).values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

function catalogueModels(db: Db): Promise<Map<string, Model>> {
  let catalogue = catalogues.get(db);
  if (!catalogue) {
    catalogue = db.model.findMany({ where: { projectId: null } }).then((rows) => new Map(rows.map((m) => [m.id, m])));
    catalogues.set(db, catalogue);
    // A failed read is not remembered: the next request asks again.
    catalogue.catch(() => catalogues.delete(db));
  }
  return catalogue;
}

/**
 * The catalogue model a serverless inference operation runs, of the kind it needs (`embedding`, `rerank`, ...):
 * 404 `model_not_found` (param `model`) when no such model exists for the project, 400 `model_not_available` when it
 * is of another kind or not served serverless.
 */
export async function serverlessModel(db: Db | Tx, projectId: string, id: string, type: string): Promise<Model> {
  const model = await findModel(db, projectId, id);
  if (!model) throw apiError(404, 'model_not_found', `The model '${id}' does not exist or is not available to this project.`, 'model');
  if (model.type !== type) throw badRequest(`'${id}' is ${withArticle(model.type)} model, not ${withArticle(type)} model.`, 'model', 'model_not_available');
  if (!model.serverless) throw notServerless(id);
  return model;
}

/**
 * The platform's answer to a serverless call of a model it lists but serves only on dedicated endpoints (a catalogue
 * model that is not serverless, or a project's upload): 400 `model_not_available`, saying how to run it.
 */
export const notServerless = (id: string, projectSlug = '<project_slug>') =>
  badRequest(
    `Unable to access non-serverless model '${id}': it is not served serverless, only on a dedicated endpoint. Deploy it on one (POST /v2/projects/{projectId}/deploy) and send the endpoint as the model: '${projectSlug}/<endpoint_name>'.`,
    'model',
    'model_not_available',
  );
