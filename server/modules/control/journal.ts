// The request journal (the Control tag): this process's last API requests and their answers, in a ring of
// `CONTROL_JOURNAL_SIZE` entries, so a test can assert what its application sent. Bodies are kept up to 4 KiB, with
// secret-looking fields redacted; the Authorization header is never read.
import type { ServerResponse } from 'node:http';
import type { OperationId } from '../../../generated/operations.ts';

export const BODY_LIMIT = 4096;
// A field named as a key, secret, password, credential or token (`api_key`, `wandb_api_key`, `hf_api_token`), not
// one that counts tokens (`max_tokens`).
const SECRET_FIELD = /(^|_)(api_?key|key|secret|password|credentials?|authorization)$|^([a-z_]+_)?token$/i;
// The operations whose `value` field is a secret's value (write-only everywhere).
const SECRET_VALUES = new Set<string>(['createSecret', 'updateSecret']);

export interface JournalEntry {
  id: number;
  at: number;
  method: string;
  path: string;
  operation: OperationId | null;
  projectId: string | null;
  status: number;
  ms: number;
  requestBody: unknown;
  responseBody: unknown;
  fault: string | null;
}

// A kept body is at most BODY_LIMIT characters, so a copy stops early: at the body nesting limit's depth and after
// enough values to fill it (a 10 MB or 100,000-level body costs no more to journal than a small one).
const MAX_DEPTH = 64;
const MAX_VALUES = BODY_LIMIT;

/** A bounded copy of a JSON value with secret-looking fields (and a secret operation's `value`) replaced. */
export function redact(value: unknown, operation: string | null, budget = { values: MAX_VALUES }, depth = 0): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) return '[deeper than 64 levels]';
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value);
  const out: [string | number, unknown][] = [];
  for (const [k, v] of entries) {
    if (--budget.values < 0) {
      out.push([typeof k === 'number' ? k : '...', '[cut]']);
      break;
    }
    const secret = typeof k === 'string' && (SECRET_FIELD.test(k) || (depth === 0 && k === 'value' && operation !== null && SECRET_VALUES.has(operation)));
    out.push([k, secret ? '[redacted]' : redact(v, operation, budget, depth + 1)]);
  }
  return Array.isArray(value) ? out.map(([, v]) => v) : Object.fromEntries(out);
}

/** A body as the journal keeps it: JSON (redacted) when it fits, else its text cut at BODY_LIMIT. */
export function keptBody(body: unknown, operation: string | null): unknown {
  if (body === undefined || body === null) return null;
  const text = typeof body === 'string' ? body : JSON.stringify(redact(body, operation));
  if (text.length > BODY_LIMIT) return `${text.slice(0, BODY_LIMIT)}... (cut at ${BODY_LIMIT} characters)`;
  return typeof body === 'string' ? body : JSON.parse(text);
}

/** Keeps the first BODY_LIMIT bytes a response writes; answers them as the journal keeps a body (JSON when whole). */
export function captureBody(res: ServerResponse): () => unknown {
  const chunks: Buffer[] = [];
  let size = 0;
  let total = 0;
  const keep = (chunk: unknown, encoding?: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
    total += buf.length;
    if (size < BODY_LIMIT) {
      chunks.push(buf.subarray(0, BODY_LIMIT - size));
      size += Math.min(buf.length, BODY_LIMIT - size);
    }
  };
  const write = res.write.bind(res) as (...a: unknown[]) => boolean;
  const end = res.end.bind(res) as (...a: unknown[]) => ServerResponse;
  res.write = ((...a: unknown[]) => {
    keep(a[0], a[1]);
    return write(...a);
  }) as typeof res.write;
  res.end = ((...a: unknown[]) => {
    keep(a[0], a[1]);
    return end(...a);
  }) as typeof res.end;
  return () => {
    const text = Buffer.concat(chunks).toString('utf8');
    if (total > BODY_LIMIT) return `${text}... (cut at ${BODY_LIMIT} of ${total} bytes)`;
    if (!text) return null;
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  };
}

export class Journal {
  private entries: JournalEntry[] = [];
  private next = 1;

  constructor(readonly size: number) {}

  get enabled(): boolean {
    return this.size > 0;
  }

  add(entry: Omit<JournalEntry, 'id'>): void {
    if (!this.enabled) return;
    this.entries.push({ ...entry, id: this.next++ });
    if (this.entries.length > this.size) this.entries.splice(0, this.entries.length - this.size);
  }

  /** Newest first, filtered. */
  list(filter: { limit: number; operation?: string; path?: string; status?: number; projectId?: string }): JournalEntry[] {
    const out: JournalEntry[] = [];
    for (let i = this.entries.length - 1; i >= 0 && out.length < filter.limit; i--) {
      const e = this.entries[i]!;
      if (filter.operation !== undefined && e.operation !== filter.operation) continue;
      if (filter.path !== undefined && !e.path.startsWith(filter.path)) continue;
      if (filter.status !== undefined && e.status !== filter.status) continue;
      if (filter.projectId !== undefined && e.projectId !== filter.projectId) continue;
      out.push(e);
    }
    return out;
  }

  clear(): number {
    const n = this.entries.length;
    this.entries = [];
    return n;
  }
}
