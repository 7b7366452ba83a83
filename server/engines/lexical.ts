// The text analysis the local embedding and rerank engines share: words (letters and digits, lower-cased, accents
// folded), English stop words dropped (the `stopword` package's list), each remaining word reduced to its Porter
// stem (the `stemmer` package), so "Llamas" and "llama" are one term and "the" is none.
import { stemmer } from 'stemmer';
import { eng } from 'stopword';

const STOP = new Set(eng);
const WORD = /[\p{L}\p{N}]+/gu;
const ACCENTS = /\p{M}+/gu;

// Stemming is most of the analysis' cost and vocabularies repeat, so stems are remembered, up to a bound.
const STEMS = new Map<string, string>();
const STEM_CACHE_SIZE = 50_000;

export function stem(word: string): string {
  let s = STEMS.get(word);
  if (s === undefined) {
    s = stemmer(word);
    if (STEMS.size >= STEM_CACHE_SIZE) STEMS.clear();
    STEMS.set(word, s);
  }
  return s;
}

/** The words of `text`: runs of letters and digits, lower-cased, accents removed. */
export function words(text: string): string[] {
  // Only text outside ASCII can carry accents; folding costs a normalisation, so plain text skips it.
  const lower = text.toLowerCase();
  const folded = /[^\p{ASCII}]/u.test(lower) ? lower.normalize('NFKD').replace(ACCENTS, '') : lower;
  return folded.match(WORD) ?? [];
}

export const isStopWord = (word: string): boolean => STOP.has(word);

// Each word's term ('' for a stop word), remembered like the stems: one lookup per word on the hot path.
const TERMS = new Map<string, string>();

/** The terms of `text`: the stems of its words that are not stop words, in order (repeats kept). */
export function terms(text: string): string[] {
  const out: string[] = [];
  for (const w of words(text)) {
    let t = TERMS.get(w);
    if (t === undefined) {
      t = STOP.has(w) ? '' : stem(w);
      if (TERMS.size >= STEM_CACHE_SIZE) TERMS.clear();
      TERMS.set(w, t);
    }
    if (t) out.push(t);
  }
  return out;
}
