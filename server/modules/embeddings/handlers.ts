// Module `embeddings`: parse -> the model (a serverless embedding model) -> the limits -> the engine -> the wire.
import { embeddingsEngineFor } from '../../engines/embeddings.ts';
import { embedIntercepted } from '../../engines/intercept.ts';
import { reply } from '../../http/reply.ts';
import { serverlessModel } from '../models/index.ts';
import type { Context } from '../types.ts';
import { acceptInput } from './rules.ts';
import { embeddingsWire } from './wire.ts';

export async function createEmbedding({ db, engines, identity, body }: Context<'createEmbedding'>) {
  const model = await serverlessModel(db.prisma, identity.projectId, body.model, 'embedding');
  const input = acceptInput(body.input, model.contextLength);
  // An answer interceptor's vectors (the control plane's scripted ones) for the texts it gives, the engine's for the rest.
  const request = { model: model.id, dimensions: model.dimensions!, input };
  const { result, headers } = await embedIntercepted(engines.intercept, request, embeddingsEngineFor(engines, model.id));
  return reply.json(embeddingsWire(model.id, result, body.encoding_format ?? 'float'), { headers });
}
