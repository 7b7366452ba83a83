// Module `embeddings`: parse -> the model (a serverless embedding model) -> the limits -> the engine -> the wire.
import { embeddingsEngineFor } from '../../engines/embeddings.ts';
import { serverlessModel } from '../models/index.ts';
import type { Context } from '../types.ts';
import { acceptInput } from './rules.ts';
import { embeddingsWire } from './wire.ts';

export async function createEmbedding({ db, engines, identity, body }: Context<'createEmbedding'>) {
  const model = await serverlessModel(db.prisma, identity.projectId, body.model, 'embedding');
  const input = acceptInput(body.input, model.contextLength);
  const result = await embeddingsEngineFor(engines, model.id).embed({ model: model.id, dimensions: model.dimensions!, input });
  return embeddingsWire(model.id, result, body.encoding_format ?? 'float');
}
