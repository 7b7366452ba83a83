// Where an upload's weights come from: a model hub repository (`org/name` or its https address), an object-storage
// path (`s3://`, `gs://`, an `*.amazonaws.com` address) or another public https address. Read for syntax only: this
// offline platform fetches nothing.
export type SourceKind = 'huggingface' | 's3' | 'gcs' | 'url';

export interface Source {
  kind: SourceKind;
  /** The repository's or path's segments (bucket first for object storage). */
  segments: string[];
}

const REPO_PART = /^(?!.*(?:--|\.\.))[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?$/;
const S3_BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const GCS_BUCKET = /^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$/;

/** Reads a `model_source` (syntax only: nothing is fetched), or answers why it is not one. */
export function parseSource(raw: string): Source | string {
  if (/\s/.test(raw)) return 'it contains whitespace';
  const repo = raw.split('/');
  if (!raw.includes(':')) {
    if (repo.length === 2 && repo.every((p) => REPO_PART.test(p))) return { kind: 'huggingface', segments: repo };
    return 'a hub repository is `org/name` (letters, digits, `.`, `_`, `-`)';
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'it is neither a hub repository nor a URL';
  }
  const path = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (url.protocol === 's3:' || url.protocol === 'gs:') {
    const kind = url.protocol === 's3:' ? 's3' : 'gcs';
    if (!(kind === 's3' ? S3_BUCKET : GCS_BUCKET).test(url.hostname)) return `'${url.hostname}' is not a valid bucket name`;
    if (path.length === 0) return 'it names a bucket but no object path';
    return { kind, segments: [url.hostname, ...path] };
  }
  if (url.protocol === 'http:') return 'plain http is not accepted; use https';
  if (url.protocol !== 'https:') return `the scheme '${url.protocol}' is not supported (hub repository, s3://, gs:// or https://)`;
  if (!url.hostname.includes('.') || url.username || url.password) return 'it is not a public https address';
  if (url.hostname === 'huggingface.co' || url.hostname === 'www.huggingface.co') {
    if (path.length === 2 && path.every((p) => REPO_PART.test(p))) return { kind: 'huggingface', segments: path };
    return 'a hub address is `https://huggingface.co/org/name`';
  }
  if (path.length === 0) return 'the address has no path';
  return { kind: /(^|\.)amazonaws\.com$/.test(url.hostname) ? 's3' : 'url', segments: [url.hostname, ...path] };
}

/** The offline stand-in for fetching: a source resolves unless a segment of it says it does not exist. */
export const resolves = (source: Source) => !source.segments.some((s) => s.toLowerCase().includes('does-not-exist'));

/** The served base architecture a source's name says it fine-tunes (longest match), if any. */
export function architectureOf(source: Source, architectures: string[]): string | undefined {
  const name = source.segments
    .at(-1)!
    .toLowerCase()
    .replace(/[_\s]+/g, '-');
  return architectures.filter((a) => name.includes(a)).sort((a, b) => b.length - a.length)[0];
}

export const SOURCE_LABEL: Record<SourceKind, string> = { huggingface: 'the model hub', s3: 'S3', gcs: 'Google Cloud Storage', url: 'the URL' };
