// One linear request pipeline, read top to bottom: request id and log line (and the guest's observer, told of the
// answer); HEAD answered as GET; the infrastructure routes; authentication (by key, except for the operations a
// signed URL authorises: their module's check runs in dispatch, after validation and before their body is read; and
// a guest's own operations, which take its key); JSON and form parsing; the nesting depth guard and the
// control-character guard; validation of the request against the spec; the guest's fault policy; the rate limits of
// the operations the spec marks `x-rate-limited` (rate-limits.ts: admitted before the handler, settled from its
// answer's `usage` after); the operation's handler, whose result `send` writes (JSON bodies checked against the spec
// first, responses.ts); and one error handler that writes the envelope for anything that went wrong on the way (after
// the limited operations' refusals are given their `x-ratelimit-reset`). The pipeline runs the operations it is given
// (`served`) and knows no module; a guest (the control plane) plugs into it through guests.ts.
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import express, { type RequestHandler } from 'express';
import { marked } from 'marked';
import { type OperationId, operations } from '../../generated/operations.ts';
import { apiError } from '../core/errors.ts';
import { changelogPath, specPath } from '../core/paths.ts';
import { failingWork } from '../runner/runner.ts';
import { authenticate, bearerKey, type KeyCache } from './auth.ts';
import { consolePages, dashboardPages } from './console.ts';
import type { Served, Services } from './context.ts';
import { errorHandler } from './error-handler.ts';
import { type Guest, sentBody } from './guests.ts';
import { inputGuards, refuseNonFinite } from './input.ts';
import { multipartBodies, type Upload } from './multipart.ts';
import { originOf } from './origin.ts';
import { Gate, rateLimitedOperations, resetOnRefusals } from './rate-limits.ts';
import { receiveBody } from './raw-body.ts';
import { Reply, send } from './reply.ts';
import { responseValidator } from './responses.ts';
import { validator } from './validator.ts';

export interface AppOptions extends Services {
  keys: KeyCache;
  /** The operations served: every module's handlers, upload rules and signed checks (platform.ts gathers them). */
  served: Served;
  /** What steers the platform from outside its modules (the control plane), when it is on (guests.ts). */
  guest?: Guest;
  /** Called once per finished API response with its operation (when one matched) and status; the contract-coverage test listens here. */
  observe?: (operationId: OperationId | undefined, status: number) => void;
}

const spec = JSON.parse(readFileSync(specPath, 'utf8'));
/** Wall-clock milliseconds with the monotonic clock's fraction (one machine's processes agree on it). */
const wallClock = () => performance.timeOrigin + performance.now();

// The API reference's page script: beside the published package's code (its build copies it there, so that the
// package installs without redoc's own dependencies, a hundred packages for one browser file), else the checkout's.
const besideCode = join(dirname(fileURLToPath(import.meta.url)), 'redoc.standalone.js');
const redocBundle = existsSync(besideCode) ? besideCode : createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js');
const docsPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>${spec.info.title} ${spec.info.version}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><p style="margin:8px 16px;font-family:sans-serif"><a href="/docs/changes">Changes to the contract</a></p>
<redoc spec-url="/openapi.json"></redoc><script src="/docs/redoc.standalone.js"></script></body></html>`;
// The changelog (CHANGELOG.md, written by `npm run spec:diff -- --changelog`) beside the reference, rendered when
// first asked for (about 30 ms, not spent at start).
let changes: string | undefined;
const changesPage = () =>
  (changes ??= `<!doctype html>
<html><head><meta charset="utf-8"><title>${spec.info.title}: changes</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em;line-height:1.5}code{font-size:90%}</style></head>
<body><p><a href="/docs">The reference</a></p>
${marked.parse(readFileSync(changelogPath, 'utf8'), { async: false })}</body></html>`);

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** Each operation's success status: its first documented 2xx. */
const successStatus = Object.fromEntries(
  Object.entries(operations).map(([id, op]) => [id, (op.statuses as readonly number[]).find((s) => s >= 200 && s < 300) ?? 200]),
) as Record<OperationId, number>;

// A literal segment wins over a path parameter (`/v1/evaluation/model-list` is not `/v1/evaluation/{id}`): paths
// with fewer parameters are tried first.
const matchers = Object.entries(operations)
  .map(([operationId, op]) => ({
    operationId: operationId as OperationId,
    method: op.method.toUpperCase(),
    pattern: new RegExp(`^${op.path.replace(/\{\w+\}/g, '[^/]+')}/?$`),
    params: (op.path.match(/\{/g) ?? []).length,
  }))
  .sort((a, b) => a.params - b.params);

/** The operation a request addresses, if any. */
export function matchOperation(method: string, path: string): OperationId | undefined {
  return matchers.find((m) => m.method === method && m.pattern.test(path))?.operationId;
}

/** The name of the path parameter at segment `i` of a request's path, when the request addresses an operation. */
function pathParamAt(method: string, path: string, i: number): string | null {
  const op = matchOperation(method, path);
  return op ? (/^\{(\w+)\}$/.exec(operations[op].path.split('/')[i] ?? '')?.[1] ?? null) : null;
}

const noRoute = (req: express.Request) => apiError(404, 'not_found', `No route ${req.method} ${req.path} exists.`);

/** Each operation's security schemes, as the spec gives them (none: the spec's default, the bearer key). */
const schemesOf = (id: OperationId): string[] | undefined => {
  const op = operations[id];
  const security: Record<string, unknown>[] | undefined = spec.paths[op.path]?.[op.method]?.security;
  return security?.flatMap((s) => Object.keys(s));
};
// The spec's security schemes by kind: the project key (`bearerAuth`); a guest's own bearer key (`controlKey`); and the
// signatures a module checks itself (`apiKey` schemes in the query: signed URLs).
const schemes: Record<string, { type: string; scheme?: string }> = spec.components.securitySchemes;
const isGuestScheme = (name: string) => name !== 'bearerAuth' && schemes[name]?.type === 'http';
const isSignature = (name: string) => schemes[name]?.type === 'apiKey';
/** The operations a guest's key opens. */
const guestOperations = (Object.keys(operations) as OperationId[]).filter((id) => schemesOf(id)?.some(isGuestScheme));
/** Where a guest's operations are: the first segment of their paths (`/_control/`). */
const guestPrefixes = [...new Set(guestOperations.map((id) => `/${operations[id].path.split('/')[1]}/`))];

/** Where API requests go: the first segment of every operation's path (`/v1/`, `/v2/`, and the requirements' `/fine-tunes/`). */
const apiPrefixes = [...new Set(Object.values(operations).map((op) => `/${op.path.split('/')[1]}/`))];

/** Upload rules by kind: multipart forms (parsed before validation) and raw bodies (read in dispatch). */
const byKind = (uploads: Served['uploads']) => ({
  multipart: Object.fromEntries(Object.entries(uploads).filter(([, r]) => !r!.raw)) as Served['uploads'],
  raw: Object.fromEntries(Object.entries(uploads).filter(([, r]) => r!.raw)) as Served['uploads'],
});

interface Matched {
  schema?: { operationId?: OperationId };
  pathParams?: Record<string, string>;
}

export function createApp(options: AppOptions): express.Express {
  const { config, log, db, keys, limits, observe, served, guest } = options;
  const { handlers, signed } = served;
  const services: Services = {
    config: options.config,
    db: options.db,
    clock: options.clock,
    log: options.log,
    runner: options.runner,
    engines: options.engines,
    limits: options.limits,
  };
  // The operations the spec authorises by a signed URL are exactly those a module checks itself.
  const unsigned = (Object.keys(operations) as OperationId[]).filter((id) => schemesOf(id)?.some(isSignature) && !signed[id]);
  const unlisted = (Object.keys(signed) as OperationId[]).filter((id) => !schemesOf(id)?.some(isSignature));
  if (unsigned.length || unlisted.length)
    throw new Error(`signed operations without a check (${unsigned.join(', ')}) or checks of unsigned ones (${unlisted.join(', ')})`);
  if (guest && !guestPrefixes.includes(guest.prefix)) throw new Error(`a guest's prefix ${guest.prefix} holds none of the spec's guest operations`);
  // Only a path a signed operation's pattern matches can be one (then the full match says which operation it is).
  const signedMatchers = matchers.filter((m) => signed[m.operationId]);
  const isSigned = (method: string, path: string) =>
    signedMatchers.some((m) => m.method === method && m.pattern.test(path)) && signed[matchOperation(method, path)!] !== undefined;
  const rules = byKind(served.uploads);
  const observer = guest?.observer;
  const faults = guest?.faults;
  /** Whether the observer is told of a request: API requests, not the guest's own. */
  const observed = (path: string) => apiPrefixes.some((p) => path.startsWith(p)) && !guestPrefixes.some((p) => path.startsWith(p));

  const app = express();
  // For the guest's observer, at `end`: when each answer is handed to the socket (wall clock), for the observer's
  // order across processes ('finish' comes only once the socket has taken the bytes, which a loaded process may reach
  // after the client has already sent its next request elsewhere), and its body, kept by reference as Express sends it
  // (JSON and text; a stream's is collected as it is written, reply.ts; a HEAD answer sends none). Set on this app's
  // own response prototype, so a request costs two assignments and no wrapper of its own.
  if (observer) {
    const end = app.response.end as (this: express.Response, chunk?: unknown, encoding?: unknown, done?: unknown) => express.Response;
    const captures = observer.captures;
    app.response.end = function (this: express.Response, chunk?: unknown, encoding?: unknown, done?: unknown) {
      this.locals.answeredAt ??= wallClock();
      if (captures && (typeof chunk === 'string' || Buffer.isBuffer(chunk))) this.locals.sent = chunk;
      return end.call(this, chunk, encoding, done);
    } as typeof app.response.end;
  }
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'extended');
  // X-Forwarded-Proto and X-Forwarded-Host count only behind a proxy that sets them (http/origin.ts).
  app.set('trust proxy', config.trustProxy);

  // The pipeline's steps, one layer of Express's router (`chain`): its walk costs per layer (a path match, the URL
  // read again), which was a seventh of whoami's CPU over the eight layers an API request passed (measured).
  const pipeline: RequestHandler[] = [];
  pipeline.push(((req, res, next) => {
    const incoming = req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('x-request-id', requestId);
    const started = process.hrtime.bigint();
    const method = req.method;
    const told = observer !== undefined && observed(req.path);
    res.on('finish', () => {
      // The validator has already matched most requests; only those it never saw (e.g. refused keys) are matched here.
      const operationId = (req as { openapi?: Matched }).openapi?.schema?.operationId ?? matchOperation(req.method, req.path);
      observe?.(operationId, res.statusCode);
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      log.info({ requestId, method, path: req.path, operationId, status: res.statusCode, ms }, 'request');
      // An observer never fails a request: what it cannot take is logged and left out.
      if (told)
        try {
          observer.observe({
            at: options.clock.now(),
            answeredAt: (res.locals.answeredAt as number | undefined) ?? wallClock(),
            method,
            path: req.originalUrl,
            operation: operationId ?? null,
            projectId: req.identity?.projectId ?? null,
            status: res.statusCode,
            ms: Math.round(ms * 10) / 10,
            requestBody: req.body,
            requestBytes: Number(req.headers['content-length'] ?? 0) || 0,
            responseBody: observer.captures ? sentBody(res.locals.sent) : null,
            fault: (res.locals.fault as string | undefined) ?? null,
            ignoredFields: (res.locals.ignoredFields as string[] | undefined) ?? null,
          });
        } catch (err) {
          log.warn({ err, requestId }, 'the request observer could not take this request');
        }
    });
    // HEAD is GET without the body: Node's response already knows to send none.
    if (method === 'HEAD') req.method = 'GET';
    next();
  }) as RequestHandler);

  // Infrastructure routes, outside the contract and without a key; one layer, so API requests pass it at once.
  const infra = express.Router();
  infra.get('/healthz', async (_req, res) => {
    const problem = await db.health();
    if (problem === null) res.json({ status: 'ok', database: db.provider });
    else res.status(503).json({ status: 'unavailable', database: db.provider, reason: problem });
  });
  infra.get('/openapi.json', (_req, res) => void res.json(spec));
  infra.get('/docs', (_req, res) => void res.type('html').send(docsPage));
  infra.get('/docs/changes', (_req, res) => void res.type('html').send(changesPage()));
  infra.get('/docs/redoc.standalone.js', (_req, res) => res.sendFile(redocBundle));
  // The console drives the guest's operations: it is there while a guest is.
  infra.use(
    '/console',
    consolePages(() => guest !== undefined),
  );
  infra.use('/dashboard', dashboardPages());
  // API requests are authenticated; everything else is an infrastructure route (or a 404). One layer for both.
  const auth = authenticate(keys);
  pipeline.push(((req, res, next) => {
    const path = req.path;
    if (!apiPrefixes.some((p) => path.startsWith(p))) return infra(req, res, next);
    if (guestPrefixes.some((p) => path.startsWith(p))) return authenticateGuest(req, next);
    return isSigned(req.method, path) ? next() : auth(req, res, next);
  }) as RequestHandler);
  // A guest's operations take the guest's key, never a project's; without the guest, its paths do not exist.
  const authenticateGuest = (req: express.Request, next: express.NextFunction) => {
    if (!guest || !req.path.startsWith(guest.prefix)) throw noRoute(req);
    const secret = bearerKey(req.get('authorization'));
    if (secret === undefined)
      throw apiError(401, 'missing_api_key', "The control plane takes the control key: send it as 'Authorization: Bearer <control key>'.");
    if (secret === null || !guest.accepts(secret))
      throw apiError(401, 'invalid_api_key', 'The control key provided is not valid (a project API key does not open the control plane).');
    next();
  };
  // An operation the spec marks `x-always-refused` (a retired one) answers its handler's refusal before its body is
  // read, so no check of the body comes first (a caller would fix the body only to be refused).
  const retired = matchers.filter((m) => spec.paths[operations[m.operationId].path]?.[operations[m.operationId].method]?.['x-always-refused']);
  if (retired.length)
    pipeline.push((async (req, _res, next) => {
      const operationId = retired.find((m) => m.method === req.method && m.pattern.test(req.path))?.operationId;
      if (!operationId || !req.identity) return next();
      req.resume();
      await (handlers[operationId] as (ctx: unknown) => Promise<unknown>)({ operationId, params: {}, query: req.query, identity: req.identity, ...services });
      next();
    }) as RequestHandler);
  const json = express.json({ limit: config.bodyLimit });
  // Form bodies (the signed upload's POST, as the official client sends it); the contract refuses them elsewhere.
  const form = express.urlencoded({ extended: false, limit: config.bodyLimit });
  const parse: RequestHandler = (req, res, next) => json(req, res, (err) => (err ? next(err) : form(req, res, next)));
  // A request without a body (most GETs) has nothing to parse. A POST, PUT or PATCH without one (or with `Content-Length: 0`) is read as `{}`, so an
  // optional body's schema still applies (its required fields answer 400 naming them) and handlers always get an object.
  const bodiless = new Set(['POST', 'PUT', 'PATCH']);
  pipeline.push(((req, res, next) => {
    const length = req.headers['content-length'];
    if ((length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined) return parse(req, res, next);
    if (bodiless.has(req.method)) req.body = {};
    next();
  }) as RequestHandler);
  // Multipart bodies of the operations that take an upload: text fields to `req.body`, the file streamed to disk.
  pipeline.push(multipartBodies(rules.multipart, matchOperation, config, spec, (req) => ({ identity: req.identity!, ...services })));
  pipeline.push(inputGuards(pathParamAt));
  pipeline.push(validator(spec, { strict: config.strictRequests }));
  const checkResponse = config.validateResponses ? responseValidator(spec) : undefined;
  const limited = limits.config.enabled ? rateLimitedOperations(spec) : new Map<OperationId, string | undefined>();

  // Dispatch by the operation the validator matched: one lookup per request, not a scan of a route per operation.
  pipeline.push((async (req, res, next) => {
    const matched = (req as { openapi?: Matched }).openapi;
    const operationId = matched?.schema?.operationId;
    if (!operationId) return next();
    const params = { ...matched!.pathParams, ...req.params };
    refuseNonFinite(params, req.query as Record<string, unknown>);
    // A signed operation: its signature answers whom it acts as (or refuses it) before any of its body is read.
    const check = signed[operationId];
    const refuse = (err: unknown): never => {
      // The unread body is discarded as it arrives, so the client, still sending, reads the answer.
      req.resume();
      throw err;
    };
    const identity = check
      ? await check(services, { params: params as Record<string, string>, query: req.query as Record<string, unknown> }).catch(refuse)
      : req.identity!;
    // A guest's fault policy (the control plane's fault rules, a request's `Prefer`) may act before the operation runs.
    const prefer = req.headers.prefer as string | undefined; // (a repeated header Node does not know, it joins into one)
    const matching =
      faults && identity && (faults.armed || prefer !== undefined)
        ? faults.match({
            operationId,
            path: req.path,
            model: typeof req.body?.model === 'string' ? req.body.model : undefined,
            projectId: identity.projectId,
            stream: req.body?.stream === true,
            prefer,
          })
        : null;
    // (Without rules or a `Prefer`, the policy answers at once: no wait.)
    const fault = matching instanceof Promise ? await matching : matching;
    if (fault) {
      res.locals.fault = fault.source;
      res.setHeader('x-fault-injected', fault.source);
      // A client that goes away ends the wait (and the request) at once.
      if (fault.delayMs && !(await waitUnlessGone(res, fault.delayMs))) return;
      if (fault.drop) return void req.socket.destroy();
      if (fault.error) refuse(fault.error);
    }
    const raw = rules.raw[operationId];
    const files = raw ? { [raw.field]: await receiveBody(req, res, raw, config) } : ((req as { uploads?: Record<string, Upload> }).uploads ?? {});
    const handler = handlers[operationId] as ((ctx: unknown) => Promise<unknown>) | undefined;
    // An operation of the spec no module serves here (a guest's, without the guest).
    if (!handler) return next();
    // A limited request is admitted on its body's `model`, or the default the spec gives it (a multipart body's text
    // fields are parsed by now).
    const gate = limited.has(operationId) ? new Gate(limits, identity, res) : undefined;
    const model = typeof req.body?.model === 'string' ? req.body.model : limited.get(operationId);
    // (Admitted at once, in memory: no wait.)
    const admitting = gate && model !== undefined ? gate.admit(model, req.body) : undefined;
    if (admitting) await admitting;
    let result: unknown;
    try {
      // The request's fields first, the services spread last: on this V8, adding a property to an object made by a
      // spread costs about a microsecond each (measured), a spread into a literal that has them costs tens of nanoseconds.
      const origin = originOf(config, req);
      const run = () => handler({ operationId, params, query: req.query, body: req.body, headers: req.headers, origin, uploads: files, identity, ...services });
      // A `fail_job` rule: the job this request creates is marked, as it is scheduled, to fail at its first step.
      result = await (fault?.failJob ? failingWork.run(fault.failJob, run) : run());
    } catch (err) {
      gate?.fail();
      throw err;
    }
    gate?.settle(result);
    if (fault?.stream && result instanceof Reply && result.content.kind === 'sse') result.content.fault = fault.stream;
    await send(req, res, result, successStatus[operationId], log, checkResponse && ((status, body) => checkResponse(operationId, status, body)));
  }) as RequestHandler);

  pipeline.push(((req) => {
    throw noRoute(req);
  }) as RequestHandler);
  app.use(chain(pipeline));
  app.use(resetOnRefusals(limits, limited, (req) => (req as { openapi?: Matched }).openapi?.schema?.operationId ?? matchOperation(req.method, req.path)));
  app.use(errorHandler(log));
  return app;
}

/**
 * Middlewares run in turn as one layer of the router, as the router runs its layers: a step that throws, rejects or
 * passes an error goes on to the error handlers. (No step uses the router's `next('route')`.)
 */
function chain(steps: RequestHandler[]): RequestHandler {
  return (req, res, next) => {
    let i = 0;
    const step = (err?: unknown): void => {
      if (err) return void next(err);
      const handler = steps[i++];
      if (!handler) return void next();
      try {
        const ret: unknown = handler(req, res, step);
        if (ret instanceof Promise) ret.then(undefined, (e: unknown) => next(e ?? new Error('Rejected promise')));
      } catch (e) {
        next(e);
      }
    };
    step();
  };
}

/** Waits `ms`, unless the client goes first (then the connection is let go at once): answers whether it is still there. */
async function waitUnlessGone(res: express.Response, ms: number): Promise<boolean> {
  if (res.destroyed) return false;
  const gone = new AbortController();
  const onClose = () => gone.abort();
  res.once('close', onClose);
  try {
    await sleep(ms, undefined, { signal: gone.signal });
    return true;
  } catch {
    res.destroy();
    return false;
  } finally {
    res.off('close', onClose);
  }
}
