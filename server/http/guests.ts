// The pipeline's seams for a guest: whatever steers the platform from outside its modules (the control plane),
// plugged in at start (platform.ts). A guest brings its own operations under its own path prefix, behind its own key
// (not a project's); a request observer, told of every finished API request; and a fault policy, asked before every
// authenticated, validated API operation runs. Without a guest (CONTROL_API=off) the pipeline runs none of it, and
// the paths the spec gives a guest's key answer 404.
import type { OperationId } from '../../generated/operations.ts';
import type { ApiError } from '../core/errors.ts';
import { CAPTURE_LIMIT, type StreamFault } from './reply.ts';

export { CAPTURE_LIMIT };

/** A finished API request as the observer is told of it. */
export interface ObservedRequest {
  /** The platform clock's time when it finished. */
  at: number;
  /**
   * Wall-clock milliseconds (fractional) when its answer was handed to the socket: taken before the bytes go, so a
   * request sent once this answer arrived, to any process on this machine, has a later time.
   */
  answeredAt: number;
  method: string;
  /** The path with its query, as sent. */
  path: string;
  operation: OperationId | null;
  projectId: string | null;
  status: number;
  ms: number;
  /** The parsed body as the operation received it (the object itself: an observer copies what it keeps). */
  requestBody: unknown;
  /** The request body's length in bytes, as sent (0 when it had none). */
  requestBytes: number;
  /** The answer's body (when the observer `captures`): its text, cut at CAPTURE_LIMIT characters. */
  responseBody: SentBody | null;
  /** The fault that acted on it (the policy's `source`), if any. */
  fault: string | null;
  /** The undeclared body fields the operation ignored (its `x-ignored-fields` header), if any. */
  ignoredFields: string[] | null;
}

export interface RequestObserver {
  /** Whether the answers' bodies are wanted (kept by reference as they are sent: next to nothing a request). */
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
  /**
   * Whether it holds rules now. Without any, only a request's `Prefer` can ask for a fault, and the pipeline asks
   * `match` nothing for a request that sent none (no request to build for every API operation).
   */
  readonly armed: boolean;
  /** The fault for one request, null for none. */
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

/**
 * An answer's body as the observer is given it: the text Express sent (by reference: no copy of an answer that fits,
 * and a copy of the first CAPTURE_LIMIT characters of a longer one, which would otherwise be kept alive whole), with
 * its full length when it was cut. A stream's events are its first CAPTURE_LIMIT characters, collected as they are
 * written (reply.ts).
 */
export interface SentBody {
  text: string;
  /** The full length when `text` was cut to CAPTURE_LIMIT characters. */
  cutFrom?: number;
}

export function sentBody(sent: unknown): SentBody | null {
  const text = typeof sent === 'string' ? sent : Buffer.isBuffer(sent) ? sent.subarray(0, CAPTURE_LIMIT + 1).toString('utf8') : undefined;
  if (text === undefined || text === '') return null;
  const length = typeof sent === 'string' ? sent.length : (sent as Buffer).length;
  if (length <= CAPTURE_LIMIT) return { text };
  // A fresh string (a slice would keep the whole answer alive while the observer holds it).
  return { text: Buffer.from(text.slice(0, CAPTURE_LIMIT)).toString(), cutFrom: length };
}
