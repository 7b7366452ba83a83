// Module `embeddings`: engine results -> the wire shape (the OpenAI embeddings list both official clients parse).
import type { EmbeddingResult } from '../../engines/embeddings.ts';
import type { Wire } from '../types.ts';

/** base64 of the vector's float32 values, little-endian whatever the machine's order. */
function base64(v: Float32Array): string {
  const bytes = Buffer.allocUnsafe(v.length * 4);
  for (let i = 0; i < v.length; i++) bytes.writeFloatLE(v[i]!, i * 4);
  return bytes.toString('base64');
}

/** The vector as numbers (a loop: Array.from goes through the iterator protocol, the cost of this response). */
function floats(v: Float32Array): number[] {
  const out = new Array<number>(v.length);
  for (let i = 0; i < v.length; i++) out[i] = v[i]!;
  return out;
}

export function embeddingsWire(model: string, r: EmbeddingResult, encoding: 'float' | 'base64'): Wire<'EmbeddingsResponse'> {
  return {
    object: 'list',
    model,
    data: r.vectors.map((v, index) => ({ object: 'embedding', embedding: encoding === 'base64' ? base64(v) : floats(v), index })),
    usage: { prompt_tokens: r.promptTokens, total_tokens: r.promptTokens },
    engine: r.engine,
  };
}
