// Module `embeddings`: engine results -> the wire shape (the OpenAI embeddings list both official clients parse).
import type { EmbeddingResult } from '../../engines/embeddings.ts';
import type { Wire } from '../types.ts';

/** base64 of the vector's float32 values, little-endian whatever the machine's order. */
function base64(v: Float32Array): string {
  const bytes = Buffer.allocUnsafe(v.length * 4);
  for (let i = 0; i < v.length; i++) bytes.writeFloatLE(v[i]!, i * 4);
  return bytes.toString('base64');
}

/**
 * The vector as numbers, pushed one by one: JSON.stringify, most of this response's cost, has its fast path for
 * packed arrays only, and an array made with `new Array(length)` is holey: stringifying 16 x 768 of them took twice
 * as long (measured). Array.from and a spread go through the iterator protocol.
 */
function floats(v: Float32Array): number[] {
  const out: number[] = [];
  for (let i = 0; i < v.length; i++) out.push(v[i]!);
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
