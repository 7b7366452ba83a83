// Module `embeddings`: parse -> the model (a serverless embedding model) -> the limits -> the engine -> the wire.
import { embeddingsEngineFor } from '../../engines/embeddings.ts';
import { reply } from '../../http/reply.ts';
import { embedScripted } from '../control/index.ts';
import { serverlessModel } from '../models/index.ts';
import type { Context } from '../types.ts';
import { acceptInput } from './rules.ts';
import { embeddingsWire } from './wire.ts';

export async function createEmbedding({ db, engines, identity, body, control, clock }: Context<'createEmbedding'>) {
  const model = await serverlessModel(db.prisma, identity.projectId, body.model, 'embedding');
  const input = acceptInput(body.input, model.contextLength);
  // The control plane's scripted vectors (if a rule gives some of these texts theirs), the engine's for the rest.
  const request = { model: model.id, dimensions: model.dimensions!, input };
  const { result, scripted } = await embedScripted(control, clock.now(), request, embeddingsEngineFor(engines, model.id));
  const wire = embeddingsWire(model.id, result, body.encoding_format ?? 'float');
  return scripted ? reply.json(wire, { headers: { 'x-scripted': scripted } }) : wire;
}
