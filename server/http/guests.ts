// The pipeline's seams for a guest: whatever steers the platform from outside its modules (the control plane),
// plugged in at start (platform.ts). A guest brings its own operations under its own path prefix, behind its own key
// (not a project's); a request observer, told of every finished API request; and a fault policy, asked before every
// authenticated, validated API operation runs. Without a guest (CONTROL_API=off) the pipeline runs none of it, and
// the paths the spec gives a guest's key answer 404.
import type { ServerResponse } from 'node:http';
import type { OperationId } from '../../generated/operations.ts';
import type { ApiError } from '../core/errors.ts';
import type { StreamFault } from './reply.ts';

/** A finished API request as the observer is told of it. */
export interface ObservedRequest {
  /** The platform clock's time when it finished. */
  at: number;
  method: string;
  /** The path with its query, as sent. */
  path: string;
  operation: OperationId | null;
  projectId: string | null;
  status: number;
  ms: number;
  /** The parsed body as the operation received it (the object itself: an observer copies what it keeps). */
  requestBody: unknown;
  /** The answer's first bytes (when the observer `captures`), as JSON when they are whole JSON, else as text. */
  responseBody: unknown;
  /** The fault that acted on it (the policy's `source`), if any. */
  fault: string | null;
  /** The undeclared body fields the operation ignored (its `x-ignored-fields` header), if any. */
  ignoredFields: string[] | null;
}

export interface RequestObserver {
  /** Whether the answers' first bytes are wanted (capturing them costs a little on every request). */
  readonly captures: boolean;
  observe(request: ObservedRequest): void;
}

/** What a fault does to one request: wait `delayMs` (abandoned if the client goes), then drop the connection, answer `error`, or go on. */
export interface Fault {
  /** Names what acted, for the response's `x-fault-injected` header and the observer. */
  source: string;
  delayMs: number;
  drop: boolean;
  error?: ApiError;
  /** Let the request through and fail the job it creates with this error (the runner's `failingWork`). */
  failJob?: { code: string; message: string };
  /** Act on the stream of events it answers (http/reply.ts). */
  stream?: StreamFault;
}

/** A request as the fault policy sees it. */
export interface FaultRequest {
  operationId: OperationId;
  path: string;
  model?: string;
  projectId: string;
  /** Whether the request asks for a stream of events (`stream: true`). */
  stream: boolean;
  /** The request's `Prefer` header (RFC 7240), if it sent one. */
  prefer?: string;
}

export interface FaultPolicy {
  /** The fault for one request, null for none. Called for every API operation: the common answer must be cheap. */
  match(request: FaultRequest): Fault | null | Promise<Fault | null>;
}

export interface Guest {
  /** The guest's own operations: the spec's paths under this prefix. */
  prefix: string;
  /** Whether a bearer secret is the guest's key (its operations take no project key). */
  accepts(secret: string): boolean;
  observer?: RequestObserver;
  faults?: FaultPolicy;
}

/** The bytes an answer's capture keeps at most. */
export const CAPTURE_LIMIT = 4096;

/**
 * Keeps the first CAPTURE_LIMIT bytes a response writes (by reference while they fit: no copy of a short answer);
 * answers them as JSON when they are a whole JSON text, else as text, with a note of the size when it was cut.
 */
export function captureBody(res: ServerResponse): () => unknown {
  const chunks: (string | Buffer)[] = [];
  let size = 0;
  let total = 0;
  const keep = (chunk: unknown, encoding?: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
    const utf8 = typeof chunk === 'string' && (typeof encoding !== 'string' || encoding === 'utf8' || encoding === 'utf-8');
    const bytes = utf8
      ? Buffer.byteLength(chunk as string)
      : Buffer.isBuffer(chunk)
        ? chunk.length
        : Buffer.byteLength(chunk as string, encoding as BufferEncoding);
    total += bytes;
    if (size >= CAPTURE_LIMIT) return;
    // A string that fits is kept as it is; anything else is copied up to the limit (a slice would keep it all alive).
    if (utf8 && size + bytes <= CAPTURE_LIMIT) chunks.push(chunk as string);
    else {
      const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, utf8 ? 'utf8' : (encoding as BufferEncoding));
      chunks.push(Buffer.from(buf.subarray(0, CAPTURE_LIMIT - size)));
    }
    size = Math.min(CAPTURE_LIMIT, size + bytes);
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
    const text =
      chunks.length === 1 && typeof chunks[0] === 'string'
        ? chunks[0]
        : Buffer.concat(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c))).toString('utf8');
    if (total > CAPTURE_LIMIT) return `${text}... (cut at ${CAPTURE_LIMIT} of ${total} bytes)`;
    if (!text) return null;
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  };
}
