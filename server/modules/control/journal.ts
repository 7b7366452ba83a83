// The request journal (the Control tag): every server process's last API requests and their answers, so a test can
// assert what its application sent. A request costs its process only an entry in memory (its bodies kept up to 4 KiB,
// credentials redacted); the entries are written to the database, where every process reads them, whenever the control
// plane's state changes, which a journal read makes happen first (shared.ts): so a read on any process holds every
// process's requests finished before it. A process killed before then loses its unwritten entries. The newest
// CONTROL_JOURNAL_SIZE entries are kept, in memory and in the database alike.
import type { OperationId } from '../../../generated/operations.ts';
import { type Database, insertRows, type Tx } from '../../db/index.ts';
import { CAPTURE_LIMIT, type ObservedRequest, type SentBody } from '../../http/guests.ts';

export const BODY_LIMIT = CAPTURE_LIMIT;

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
  ignoredFields: string[] | null;
}

// ---- redaction ----------------------------------------------------------------------------------------------------

// The words of a field's name (`hfToken`, `HF_TOKEN`, `api-key` -> hf, token / api, key).
const wordsOf = (name: string) =>
  name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
const SECRET_WORDS = new Set(['token', 'secret', 'password', 'passwd', 'passphrase', 'credential', 'credentials', 'authorization', 'apikey', 'pat']);
/**
 * Whether a field (or a name/value pair's name) names a credential: a word of it is token, secret, password,
 * credential, authorization, or its last word is `key` (`api_key`, `HF_TOKEN`, `wandb_api_key`, `secretKey`), but not
 * a count of them (`max_tokens`, `prompt_tokens`: plural) nor a bare `key` (a sampling key names a field).
 */
export function namesCredential(name: string): boolean {
  const words = wordsOf(name);
  if (words.some((w) => SECRET_WORDS.has(w))) return true;
  return words.length > 1 && words.at(-1) === 'key';
}
// A value that is a credential whatever its name: an Authorization header's value, or a token of a known issuer.
const CREDENTIAL_VALUE =
  /^(?:(?:Bearer|Basic|Token)\s+\S{8,}|(?:sk|pk|rk)-[\w-]{16,}|hf_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abprs]-[\w-]{10,}|AKIA[0-9A-Z]{16}|ctl_[\w-]{16,}|tgp_v1_[\w-]{16,})$/;
/** The operations whose `value` field is a secret's value (write-only everywhere). */
const SECRET_VALUES = new Set<string>(['createSecret', 'updateSecret']);
const REDACTED = '[redacted]';

// A kept body is at most BODY_LIMIT characters, so a copy stops early: at the body nesting limit's depth and after
// enough values to fill it (a 10 MB or 100,000-level body costs no more to journal than a small one).
const MAX_DEPTH = 64;
const MAX_VALUES = BODY_LIMIT;

function* arrayEntries(value: unknown[]): Generator<readonly [number, unknown]> {
  for (let i = 0; i < value.length; i++) yield [i, value[i]];
}
function* objectEntries(value: Record<string, unknown>): Generator<readonly [string, unknown]> {
  for (const k in value) if (Object.hasOwn(value, k)) yield [k, value[k]];
}

/**
 * A bounded copy of a JSON value with credentials replaced: fields named as one, the `value` of a name/value pair
 * whose name names one (an environment variable `{"name": "HF_TOKEN", "value": ...}`), a secret operation's `value`,
 * and strings shaped like a credential wherever they are.
 */
export function redact(value: unknown, operation: string | null, budget = { values: MAX_VALUES }, depth = 0): unknown {
  if (typeof value === 'string') return CREDENTIAL_VALUE.test(value) ? REDACTED : value;
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) return '[deeper than 64 levels]';
  const isArray = Array.isArray(value);
  // Walked one entry at a time: an array or object of 900,000 entries is cut after the budget, not copied whole first.
  const entries = isArray ? arrayEntries(value) : objectEntries(value as Record<string, unknown>);
  // A name/value pair: `{name|key: <credential name>, value: ...}`.
  const pairName = isArray ? undefined : ((value as Record<string, unknown>).name ?? (value as Record<string, unknown>).key);
  const secretPair = typeof pairName === 'string' && namesCredential(pairName);
  const out: [string | number, unknown][] = [];
  for (const [k, v] of entries) {
    if (--budget.values < 0) {
      out.push([typeof k === 'number' ? k : '...', '[cut]']);
      break;
    }
    const secret =
      typeof k === 'string' &&
      typeof v !== 'number' &&
      typeof v !== 'boolean' &&
      v !== null &&
      (namesCredential(k) || (k === 'value' && (secretPair || (depth === 0 && operation !== null && SECRET_VALUES.has(operation)))));
    out.push([k, secret ? REDACTED : redact(v, operation, budget, depth + 1)]);
  }
  return isArray ? out.map(([, v]) => v) : Object.fromEntries(out);
}

/** A body as the journal keeps it: JSON (redacted) when it fits, else its text cut at BODY_LIMIT. */
export function keptBody(body: unknown, operation: string | null): unknown {
  if (body === undefined || body === null) return null;
  const kept = redact(body, operation);
  const text = typeof kept === 'string' ? kept : JSON.stringify(kept);
  if (text.length > BODY_LIMIT) return `${text.slice(0, BODY_LIMIT)}... (cut at ${BODY_LIMIT} characters)`;
  return kept;
}

// ---- the journal --------------------------------------------------------------------------------------------------

/**
 * What a process holds of a request until it writes the journal down: the observed request itself, its bodies as they
 * were (the request's object, the answer's text), turned into what the journal keeps (redacted, cut at BODY_LIMIT)
 * only when they are written, so a request costs its process a reference. A large request body is turned at once, so
 * that an entry keeps no more than the journal will (its `requestBytes` says so).
 */
type Held = ObservedRequest;

/** Above this many bytes a request body is turned into what the journal keeps when it is taken, not held whole. */
const HELD_BODY_BYTES = 65_536;

/** An answer's text as the journal keeps it: JSON (redacted) when it is a whole JSON text, else the text (with its cut). */
function keptAnswer(sent: SentBody | null, operation: string | null): unknown {
  if (!sent) return null;
  if (sent.cutFrom !== undefined) return `${sent.text}... (cut at ${BODY_LIMIT} of ${sent.cutFrom} characters)`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(sent.text);
  } catch {
    return sent.text;
  }
  return keptBody(parsed, operation);
}

export class Journal {
  /** The newest `size` requests, a ring once full: `oldest` is where the next one goes (a request costs no shift). */
  private held: Held[] = [];
  private oldest = 0;

  constructor(
    private readonly db: Database,
    readonly size: number,
  ) {}

  get enabled(): boolean {
    return this.size > 0;
  }

  add(request: ObservedRequest): void {
    if (!this.enabled) return;
    if (request.requestBytes > HELD_BODY_BYTES) request.requestBody = keptBody(request.requestBody, request.operation);
    if (this.held.length < this.size) this.held.push(request);
    else {
      this.held[this.oldest] = request;
      this.oldest = (this.oldest + 1) % this.size;
    }
  }

  /** Forgets what this process holds (a clear or reset of the journal, made anywhere). */
  drop(): void {
    this.held = [];
    this.oldest = 0;
  }

  /** Writes what this process holds to the database, and keeps the newest `size` there. */
  async flush(): Promise<void> {
    if (!this.held.length) return;
    const rows = [...this.held.slice(this.oldest), ...this.held.slice(0, this.oldest)];
    this.drop();
    const json = (v: unknown) => (v === null ? null : JSON.stringify(v));
    await this.db.write(async (tx) => {
      await insertRows(
        tx,
        'ControlJournalEntry',
        rows.map((r) => ({
          at: r.at,
          // Wall-clock microseconds when it was answered: the order of entries across processes (the platform's clock
          // may stand still in a test).
          finishedAt: BigInt(Math.round(r.answeredAt * 1000)),
          method: r.method,
          path: r.path,
          operation: r.operation,
          projectId: r.projectId,
          status: r.status,
          ms: r.ms,
          requestBody: json(r.requestBytes > HELD_BODY_BYTES ? r.requestBody : keptBody(r.requestBody, r.operation)),
          responseBody: json(keptAnswer(r.responseBody, r.operation)),
          fault: r.fault,
          ignoredFields: json(r.ignoredFields),
        })),
      );
      await this.trim(tx);
    });
  }

  private async trim(tx: Tx): Promise<void> {
    const [edge] = await tx.controlJournalEntry.findMany({
      orderBy: [{ finishedAt: 'desc' }, { id: 'desc' }],
      skip: this.size,
      take: 1,
      select: { finishedAt: true },
    });
    if (edge) await tx.controlJournalEntry.deleteMany({ where: { finishedAt: { lte: edge.finishedAt } } });
  }

  /** Newest first, filtered: what the database holds (flush first). */
  async list(filter: { limit: number; operation?: string; path?: string; status?: number; projectId?: string }): Promise<JournalEntry[]> {
    const rows = await this.db.prisma.controlJournalEntry.findMany({
      where: {
        operation: filter.operation,
        path: filter.path === undefined ? undefined : { startsWith: filter.path },
        status: filter.status,
        projectId: filter.projectId,
      },
      orderBy: [{ finishedAt: 'desc' }, { id: 'desc' }],
      take: filter.limit,
    });
    const parsed = (text: string | null) => (text === null ? null : JSON.parse(text));
    return rows.map((r) => ({
      id: r.id,
      at: Number(r.at),
      method: r.method,
      path: r.path,
      operation: r.operation as OperationId | null,
      projectId: r.projectId,
      status: r.status,
      ms: r.ms,
      requestBody: parsed(r.requestBody),
      responseBody: parsed(r.responseBody),
      fault: r.fault,
      ignoredFields: parsed(r.ignoredFields),
    }));
  }

  /** Empties the journal's table (in a change's transaction); answers how many entries it held. */
  static async clear(tx: Tx): Promise<number> {
    return (await tx.controlJournalEntry.deleteMany({})).count;
  }
}
