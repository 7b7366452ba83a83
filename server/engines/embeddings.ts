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

/** FNV-1a's state `h` carried over the UTF-16 code units of `text`. */
function fnv(h: number, text: string): number {
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h;
}

/** MurmurHash3's finaliser, so that every bit of an FNV-1a state is mixed. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** FNV-1a over the UTF-16 code units from `seed`, then mixed. */
const hash = (text: string, seed: number) => mix(fnv((0x811c9dc5 ^ seed) >>> 0, text));

const WEIGHT = { term: 1, pair: 0.5, trigram: 0.25 };

/**
 * The local engine's vector of `text` in `dimensions` dimensions (`seed`: the model's), written into `v` (zeros). A
 * feature is hashed as the text `t:<stem>`, `p:<stem> <stem>` or `c:<trigram>` would be, without making that text:
 * its prefix's hash state is carried over the stems' and the marked word's code units (the strings were most of a
 * vector's cost), and only the buckets a feature touched are normalised (two loops over every dimension were most of
 * the rest). The vectors are the same, bit for bit, as before both (test/embeddings.test.ts keeps their digest).
 */
export function lexicalVector(text: string, dimensions: number, seed: number, v = new Float32Array(dimensions)): Float32Array {
  const start = (0x811c9dc5 ^ seed) >>> 0;
  const term = fnv(start, 't:');
  const pair = fnv(start, 'p:');
  const trigram = fnv(start, 'c:');
  // The buckets the features touched, a bit each (most are not): the norm visits them alone, in index order.
  const touched: number[] = new Array(Math.ceil(dimensions / 32)).fill(0);
  // One hashed feature: its bucket from the high bits, its sign from the lowest.
  const add = (state: number, weight: number) => {
    const h = mix(state);
    const at = (h >>> 1) % dimensions;
    touched[at >>> 5] |= 1 << (at & 31);
    v[at]! += h & 1 ? -weight : weight;
  };
  // The trigrams of `<word>`: its code units, with the marks '<' (60) and '>' (62) around them.
  const trigrams = (word: string) => {
    const last = word.length + 1;
    for (let i = 0; i + 2 <= last; i++) {
      let h = trigram;
      for (let k = i; k < i + 3; k++) h = Math.imul(h ^ (k === 0 ? 60 : k === last ? 62 : word.charCodeAt(k - 1)), 0x01000193);
      add(h, WEIGHT.trigram);
    }
  };
  const all = words(text);
  let content = all.filter((w) => !isStopWord(w));
  if (content.length === 0) content = all;
  if (content.length === 0) trigrams(text.trim());
  let previous: string | undefined;
  for (const w of content) {
    const s = stem(w);
    add(fnv(term, s), WEIGHT.term);
    if (previous !== undefined) add(fnv(fnv(fnv(pair, previous), ' '), s), WEIGHT.pair);
    previous = s;
    trigrams(w);
  }
  // The touched buckets in index order: the sums a loop over every dimension makes (an untouched one adds 0), so the
  // same norm, and the same quotients.
  const each = (visit: (i: number) => void) => {
    for (let word = 0; word < touched.length; word++)
      for (let bits = touched[word]!; bits !== 0; bits &= bits - 1) visit(word * 32 + 31 - Math.clz32(bits & -bits));
  };
  let norm = 0;
  each((i) => {
    norm += v[i]! * v[i]!;
  });
  norm = Math.sqrt(norm);
  if (norm > 0)
    each((i) => {
      v[i]! /= norm;
    });
  return v;
}

export const localEmbeddingsEngine: EmbeddingsEngine = {
  async embed({ model, dimensions, input }) {
    const seed = hash(model, 0);
    // One buffer for the request's vectors, each a view of it: a typed array's own buffer costs more than its vector.
    const all = new Float32Array(input.length * dimensions);
    return {
      vectors: input.map((text, i) => lexicalVector(text, dimensions, seed, all.subarray(i * dimensions, (i + 1) * dimensions))),
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
