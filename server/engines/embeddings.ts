// Text embeddings: the engine interface, the local engine, and the upstream engine (an OpenAI-compatible server's
// POST /embeddings), chosen per model by the engine routes (routes.ts, capability `embeddings`).
//
// The local engine has no model weights. It computes a lexical embedding: each text's features are hashed into the
// model's number of dimensions (signed feature hashing), and the vector is L2-normalised, so the dot product of
// two vectors is their cosine similarity and measures shared vocabulary, not meaning. The features
// (lexical.ts): the stem of each word that is not a stop word (weight 1), each pair of adjacent stems (0.5, word
// order), and the character trigrams of each such word with its boundaries marked (0.25 each, spelling variants
// and forms the stemmer keeps apart, such as "america" and "american"). A text of stop words only uses all its
// words; a text with no letters or digits, its characters. The hash is seeded by the model id, so two models
// give unrelated vectors, as real models do. Deterministic: the same model and text give the same vector.
import { ApiError } from '../core/errors.ts';
import { isStopWord, stem, words } from './lexical.ts';
import type { EngineRoutes, UpstreamRoute } from './routes.ts';
import { countTokens } from './tokens.ts';
import { upstreamFetch } from './upstream.ts';

export interface EmbeddingRequest {
  /** The catalogue model (canonical id). */
  model: string;
  /** The length of the model's vectors (the local engine's; an upstream answers its own). */
  dimensions: number;
  input: string[];
}

export interface EmbeddingResult {
  /** One L2-normalised vector per input, in the inputs' order. */
  vectors: Float32Array[];
  promptTokens: number;
  /** Which engine computed the vectors, as the response says it. */
  engine: 'local' | 'upstream';
}

export interface EmbeddingsEngine {
  embed(request: EmbeddingRequest): Promise<EmbeddingResult>;
}

/** FNV-1a over the UTF-16 code units from `seed`, then MurmurHash3's finaliser so that every bit is mixed. */
function hash(text: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const WEIGHT = { term: 1, pair: 0.5, trigram: 0.25 };

/** The local engine's vector of `text` in `dimensions` dimensions (`seed`: the model's). */
export function lexicalVector(text: string, dimensions: number, seed: number): Float32Array {
  const v = new Float32Array(dimensions);
  // One hashed feature: its bucket from the high bits, its sign from the lowest.
  const add = (feature: string, weight: number) => {
    const h = hash(feature, seed);
    v[(h >>> 1) % dimensions]! += h & 1 ? -weight : weight;
  };
  const trigrams = (marked: string) => {
    for (let i = 0; i + 3 <= marked.length; i++) add(`c:${marked.slice(i, i + 3)}`, WEIGHT.trigram);
  };
  const all = words(text);
  let content = all.filter((w) => !isStopWord(w));
  if (content.length === 0) content = all;
  if (content.length === 0) trigrams(`<${text.trim()}>`);
  let previous: string | undefined;
  for (const w of content) {
    const s = stem(w);
    add(`t:${s}`, WEIGHT.term);
    if (previous !== undefined) add(`p:${previous} ${s}`, WEIGHT.pair);
    previous = s;
    trigrams(`<${w}>`);
  }
  let norm = 0;
  for (let i = 0; i < dimensions; i++) norm += v[i]! * v[i]!;
  norm = Math.sqrt(norm);
  if (norm > 0) for (let i = 0; i < dimensions; i++) v[i]! /= norm;
  return v;
}

export const localEmbeddingsEngine: EmbeddingsEngine = {
  async embed({ model, dimensions, input }) {
    const seed = hash(model, 0);
    return {
      vectors: input.map((text) => lexicalVector(text, dimensions, seed)),
      promptTokens: input.reduce((sum, text) => sum + countTokens(text), 0),
      engine: 'local',
    };
  },
};

const malformed = (route: UpstreamRoute, why: string) =>
  new ApiError(502, 'upstream_failed', `The upstream engine at ${route.url} answered without usable embeddings: ${why}.`, null, 'server_error');

/** A vector as an upstream sends it: an array of numbers, or base64 of little-endian float32. */
function vectorFrom(route: UpstreamRoute, embedding: unknown, i: number): Float32Array {
  if (Array.isArray(embedding) && embedding.length > 0 && embedding.every((x) => typeof x === 'number' && Number.isFinite(x)))
    return Float32Array.from(embedding);
  if (typeof embedding === 'string') {
    const bytes = Buffer.from(embedding, 'base64');
    if (bytes.length > 0 && bytes.length % 4 === 0) return Float32Array.from({ length: bytes.length / 4 }, (_, k) => bytes.readFloatLE(k * 4));
  }
  throw malformed(route, `data[${i}].embedding is not a list of numbers`);
}

/** Forwards the inputs to an OpenAI-compatible server (vLLM, llama.cpp, Ollama, another instance of this one). */
export function upstreamEmbeddingsEngine(route: UpstreamRoute): EmbeddingsEngine {
  return {
    async embed({ model, input }) {
      // Floats are asked for: every OpenAI-compatible server has them; the caller's encoding is applied here.
      const res = await upstreamFetch(route, '/embeddings', { model: route.model ?? model, input, encoding_format: 'float' });
      const body = (await res.json().catch(() => null)) as { data?: unknown; usage?: { prompt_tokens?: unknown } } | null;
      if (!Array.isArray(body?.data)) throw malformed(route, 'no data list');
      if (body.data.length !== input.length) throw malformed(route, `${body.data.length} vectors for ${input.length} inputs`);
      const vectors: Float32Array[] = new Array(input.length);
      // biome-ignore lint/suspicious/noExplicitAny: an upstream's answer, checked field by field below.
      body.data.forEach((d: any, i: number) => {
        const at = typeof d?.index === 'number' ? d.index : i;
        if (!Number.isInteger(at) || at < 0 || at >= input.length || vectors[at])
          throw malformed(route, `data[${i}].index ${d?.index} does not name one input`);
        vectors[at] = vectorFrom(route, d?.embedding, i);
      });
      const counted = body.usage?.prompt_tokens;
      return {
        vectors,
        promptTokens:
          typeof counted === 'number' && Number.isInteger(counted) && counted >= 0 ? counted : input.reduce((sum, text) => sum + countTokens(text), 0),
        engine: 'upstream',
      };
    },
  };
}

/** The engine that serves `model` (its canonical id): local unless a route sends it upstream. */
export function embeddingsEngineFor(routes: EngineRoutes, model: string): EmbeddingsEngine {
  const route = routes.routeFor('embeddings', model);
  return route.engine === 'upstream' ? upstreamEmbeddingsEngine(route) : localEmbeddingsEngine;
}
