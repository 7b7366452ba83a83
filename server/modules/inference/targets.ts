// Who serves a `model` string: a dedicated endpoint of the caller's project (`<project_slug>/<endpoint_name>`, v2
// routed by its traffic split, or a running v1 endpoint), one v2 deployment (`.../<deployment_name>`), an adapter
// (`...:<adapter>`: bound to a v1 endpoint, or served by v2 deployments with LoRA enabled), or a serverless model of
// a type the operation takes.

import type { Deployment } from '../../../generated/prisma/sqlite/client/client.ts';
import { ApiError, apiError, badRequest, withArticle } from '../../core/errors.ts';
import type { Identity } from '../../core/identity.ts';
import type { Database, Db, Tx } from '../../db/index.ts';
import type { Timing } from '../../runner/progress.ts';
import { findAdapter } from '../adapters/index.ts';
import { adapterServers, readyEstimate, routeRequest, splitOf } from '../dedicated/index.ts';
import { catalogueModel, findModel, notServerless } from '../models/index.ts';

export interface Target {
  /** A deployment id, a v1 endpoint id, or `serverless`. */
  servedBy: string;
  /** The v2 endpoint whose deployment serves it: its requests are recorded (dedicated `recordServed`). */
  endpointId?: string;
  model: string;
  adapter?: string;
  /** The model's context length in tokens, when the catalogue (or the upload) knows it. */
  contextLength: number | null;
}

/** The model types each operation serves: a base language model has no chat template. */
export const SERVES = {
  chat: ['chat', 'code'],
  completion: ['chat', 'language', 'code', 'moderation'],
} as const;

const OPERATIONS_OF: Record<string, string> = {
  embedding: 'POST /v1/embeddings',
  rerank: 'POST /v1/rerank',
  audio: 'POST /v1/audio/transcriptions, /v1/audio/translations or /v1/audio/speech',
  video: 'POST /v2/videos',
  image: 'POST /v1/images/generations',
  language: 'POST /v1/completions',
};

/**
 * Read through the database, or through a transaction (its view: a fixture's endpoint made in the same one).
 * Routing a request to a v2 endpoint writes (its split's turn): in the database's own transaction, or the given one.
 */
type Source = Database | Tx;
const isDatabase = (s: Source): s is Database => 'provider' in s && 'write' in s;
const readerOf = (s: Source): Db | Tx => (isDatabase(s) ? s.prisma : s);
const writing = <T>(s: Source, fn: (tx: Tx) => Promise<T>): Promise<T> => (isDatabase(s) ? s.write(fn) : fn(s));

/** The target, with the context length of the model it runs. */
export async function resolveTarget(
  source: Source,
  identity: Pick<Identity, 'projectId' | 'projectSlug'>,
  model: string,
  operation: keyof typeof SERVES,
  timing?: Timing,
): Promise<Target> {
  const found = await findTarget(source, identity, model, operation, timing);
  if (found.contextLength !== undefined) return found as Target;
  const db = readerOf(source);
  const row = (await catalogueModel(db, found.model)) ?? (await db.model.findUnique({ where: { id: found.model }, select: { contextLength: true } }));
  return { ...found, contextLength: row?.contextLength ?? null };
}

/**
 * 404 when nothing has that name, 400 when it is a model of another type or one not served serverless, 503 when it
 * exists but cannot serve now: with `Retry-After` when a deployment that would serve it is on its way to READY
 * (waking from zero replicas, or provisioning), given `timing` to tell when.
 */
async function findTarget(
  source: Source,
  identity: Pick<Identity, 'projectId' | 'projectSlug'>,
  model: string,
  operation: keyof typeof SERVES,
  timing?: Timing,
): Promise<Omit<Target, 'contextLength'> & { contextLength?: number | null }> {
  const unknown = () => apiError(404, 'model_not_found', `The model '${model}' does not exist or is not available to this project.`, 'model');
  const notReady = (why: string) => apiError(503, 'endpoint_not_ready', `Endpoint '${model}' cannot serve requests now: ${why}.`, 'model');
  /** The 503 of deployments that cannot serve yet: when one of `starting` will be READY, said and given as Retry-After. */
  const notYet = async (why: string, starting: Deployment[]) => {
    const ready = timing && (await readyEstimate(readerOf(source), timing, starting));
    if (!ready) return notReady(why);
    const seconds = Math.max(1, Math.ceil(ready.inMs / 1000));
    const message = ready.waking
      ? `Endpoint '${model}' is waking: it was scaled to zero replicas and this request started it; it should be ready in about ${seconds} s (Retry-After).`
      : `Endpoint '${model}' cannot serve requests yet: ${why}; it should be ready in about ${seconds} s (Retry-After).`;
    return new ApiError(503, 'endpoint_not_ready', message, 'model', 'server_error', { 'Retry-After': String(seconds) });
  };
  const { projectId, projectSlug } = identity;
  const db = readerOf(source);

  if (model.startsWith(`${projectSlug}/`)) {
    let rest = model.slice(projectSlug.length + 1);
    const colon = rest.indexOf(':');
    const adapterRef = colon >= 0 ? rest.slice(colon + 1) : undefined;
    if (colon >= 0) rest = rest.slice(0, colon);
    const [endpointName, deploymentName, ...extra] = rest.split('/');
    if (extra.length) throw unknown();

    const v2 = await db.dedicatedEndpoint.findFirst({ where: { projectId, name: endpointName } });
    if (v2) {
      // An adapter is served by the deployments it is bound to and by those with LoRA enabled for its base model.
      const adapter = adapterRef === undefined ? null : await findAdapter(db, projectId, adapterRef);
      if (adapterRef !== undefined && !adapter) throw unknown();
      const loraNotEnabled = (where: string) =>
        badRequest(
          `${where} serves LoRA adapter '${adapter!.name}' (of ${adapter!.baseModelId ?? adapter!.loraModel}): bind it to a deployment (its adapters) or deploy with enableLora: true.`,
          'model',
          'lora_not_enabled',
        );
      const deployments = await db.deployment.findMany({ where: { endpointId: v2.id } });
      const accepts = adapter ? await adapterServers(db, deployments, adapter) : undefined;
      if (deploymentName !== undefined) {
        const d = deployments.find((x) => x.name === deploymentName);
        if (!d) throw unknown();
        if (accepts && !accepts(d)) throw loraNotEnabled(`Deployment '${deploymentName}'`);
        if (d.state !== 'DEPLOYMENT_STATE_READY') throw await notYet(`deployment '${deploymentName}' is ${d.state}`, [d]);
        return { servedBy: d.id, endpointId: v2.id, model: d.modelId, adapter: adapter?.name };
      }
      if (accepts && !deployments.some(accepts)) throw loraNotEnabled('No deployment of this endpoint');
      const d = await writing(source, async (tx) => {
        const endpoint = await tx.dedicatedEndpoint.findUnique({ where: { id: v2.id } });
        return endpoint ? routeRequest(tx, endpoint, accepts) : null;
      });
      if (!d) {
        const routed = new Set(
          splitOf(v2)
            .filter((e) => e.weight > 0)
            .map((e) => e.deploymentId),
        );
        const starting = deployments.filter((x) => routed.has(x.id) && (!accepts || accepts(x)));
        throw await notYet(`no READY deployment${adapter ? ' serving that adapter' : ''} has a positive weight in its traffic split`, starting);
      }
      return { servedBy: d.id, endpointId: v2.id, model: d.modelId, adapter: adapter?.name };
    }

    const v1 = deploymentName === undefined ? await db.v1Endpoint.findFirst({ where: { projectId, name: endpointName } }) : null;
    if (v1) {
      let adapter: string | undefined;
      if (adapterRef !== undefined) {
        const a = await findAdapter(db, projectId, adapterRef);
        const bound = a && (await db.adapterBinding.findFirst({ where: { endpointId: v1.id, adapterModelId: a.id } }));
        if (!a || !bound) throw unknown();
        adapter = a.name;
      }
      if (v1.state !== 'STARTED') throw notReady(`the v1 endpoint is ${v1.state} (v1 endpoints cannot restart; deploy on v2)`);
      return { servedBy: v1.id, model: v1.modelId, adapter };
    }
    throw unknown();
  }

  // A model that is listed (the catalogue, or the project's own uploads) but not served serverless is not an
  // unknown name: it is 400 `model_not_available`, saying how to run it, as on the platform.
  const listed = await findModel(db, projectId, model);
  if (!listed) throw unknown();
  if (!(SERVES[operation] as readonly string[]).includes(listed.type)) {
    const where = OPERATIONS_OF[listed.type];
    throw badRequest(
      `'${model}' is ${withArticle(listed.type)} model: ${operation === 'chat' ? 'chat completions take' : 'completions take'} ${SERVES[operation].join(', ')} models${where ? `; use ${where}` : ''}.`,
      'model',
      'model_not_supported',
    );
  }
  if (!listed.serverless) throw notServerless(model, projectSlug);
  return { servedBy: 'serverless', model: listed.id, contextLength: listed.contextLength };
}
