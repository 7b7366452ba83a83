// One linear request pipeline, read top to bottom: request id and log line; HEAD answered as GET; the
// infrastructure routes; authentication (by key, except for the operations a signed URL authorises: their module's
// check runs in dispatch, after validation and before their body is read); JSON and form parsing; the nesting
// depth guard and the control-character guard; validation of the request against the spec; the rate limits of the operations the spec
// marks `x-rate-limited` (rate-limits.ts: admitted before the handler, settled from its answer's `usage` after); the
// operation's handler, whose result `send` writes (JSON bodies checked against the spec first, responses.ts); and
// one error handler that writes the envelope for anything that went wrong on the way (after the limited operations'
// refusals are given their `x-ratelimit-reset`).
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import express, { type RequestHandler } from 'express';
import { marked } from 'marked';
import { type OperationId, operations } from '../../generated/operations.ts';
import { apiError } from '../core/errors.ts';
import { changelogPath, specPath } from '../core/paths.ts';
import type { RateLimits } from '../limits/rate-limits.ts';
import { captureBody, failedWith, keptBody } from '../modules/control/index.ts';
import { handlers, signed, uploads } from '../modules/index.ts';
import type { Services } from '../modules/types.ts';
import { failingWork } from '../runner/runner.ts';
import { authenticate, bearerKey, type KeyCache } from './auth.ts';
import { consolePages, dashboardPages } from './console.ts';
import { errorHandler } from './error-handler.ts';
import { refuseControlCharacters, refuseDeepNesting, refuseNonFinite } from './input.ts';
import { multipartBodies, type Upload } from './multipart.ts';
import { originOf } from './origin.ts';
import { Gate, rateLimitedOperations, resetOnRefusals } from './rate-limits.ts';
import { receiveBody } from './raw-body.ts';
import { Reply, send } from './reply.ts';
import { responseValidator } from './responses.ts';
import { validator } from './validator.ts';

export interface AppOptions extends Services {
  keys: KeyCache;
  limits: RateLimits;
  /** Called once per finished API response with its operation (when one matched) and status; the contract-coverage test listens here. */
  observe?: (operationId: OperationId | undefined, status: number) => void;
}

const spec = JSON.parse(readFileSync(specPath, 'utf8'));

const redocBundle = createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js');
const docsPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>${spec.info.title} ${spec.info.version}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><p style="margin:8px 16px;font-family:sans-serif"><a href="/docs/changes">Changes to the contract</a></p>
<redoc spec-url="/openapi.json"></redoc><script src="/docs/redoc.standalone.js"></script></body></html>`;
// The changelog (CHANGELOG.md, written by `npm run spec:diff -- --changelog`) beside the reference.
const changesPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>${spec.info.title}: changes</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em;line-height:1.5}code{font-size:90%}</style></head>
<body><p><a href="/docs">The reference</a></p>
${marked.parse(readFileSync(changelogPath, 'utf8'), { async: false })}</body></html>`;

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

const CONTROL_PREFIX = '/_control/';
/** Whether a request goes in the journal: API requests, not the control plane's own. */
const journaled = (path: string) => !path.startsWith(CONTROL_PREFIX) && apiPrefixes.some((p) => path.startsWith(p));

const noRoute = (req: express.Request) => apiError(404, 'not_found', `No route ${req.method} ${req.path} exists.`);

// The operations the spec authorises otherwise than by the bearer key are exactly those a module checks itself
// (the control plane's, which take the control key, aside).
const unkeyed = Object.entries(operations)
  .filter(([, op]) => {
    const security: Record<string, unknown>[] | undefined = spec.paths[op.path]?.[op.method]?.security;
    return security !== undefined && !security.some((s) => 'bearerAuth' in s || 'controlKey' in s);
  })
  .map(([id]) => id)
  .sort();
if (JSON.stringify(unkeyed) !== JSON.stringify(Object.keys(signed).sort())) {
  throw new Error(`operations without bearerAuth in the spec (${unkeyed.join(', ')}) and modules' signed checks (${Object.keys(signed).join(', ')}) differ`);
}
const signedMethods = new Set(unkeyed.map((id) => operations[id as OperationId].method.toUpperCase()));
const isSigned = (method: string, path: string) => signedMethods.has(method) && signed[matchOperation(method, path)!] !== undefined;

/** Where API requests go: the first segment of every operation's path (`/v1/`, `/v2/`, and the requirements' `/fine-tunes/`). */
const apiPrefixes = [...new Set(Object.values(operations).map((op) => `/${op.path.split('/')[1]}/`))];

/** Upload rules by kind: multipart forms (parsed before validation) and raw bodies (read in dispatch). */
const multipartRules = Object.fromEntries(Object.entries(uploads).filter(([, r]) => !r.raw));
const rawRules = Object.fromEntries(Object.entries(uploads).filter(([, r]) => r.raw)) as typeof uploads;

interface Matched {
  schema?: { operationId?: OperationId };
  pathParams?: Record<string, string>;
}

export function createApp(options: AppOptions): express.Express {
  const { config, log, db, keys, limits, observe } = options;
  const services: Services = {
    config: options.config,
    db: options.db,
    clock: options.clock,
    log: options.log,
    runner: options.runner,
    engines: options.engines,
    control: options.control,
  };
  const { control } = options;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'extended');
  // X-Forwarded-Proto and X-Forwarded-Host count only behind a proxy that sets them (http/origin.ts).
  app.set('trust proxy', config.trustProxy);

  app.use(((req, res, next) => {
    const incoming = req.get('x-request-id');
    const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('x-request-id', requestId);
    const started = process.hrtime.bigint();
    const method = req.method;
    const answered = control.journal.enabled && journaled(req.path) ? captureBody(res) : undefined;
    res.on('finish', () => {
      // The validator has already matched most requests; only those it never saw (e.g. refused keys) are matched here.
      const operationId = (req as { openapi?: Matched }).openapi?.schema?.operationId ?? matchOperation(req.method, req.path);
      observe?.(operationId, res.statusCode);
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      log.info({ requestId, method, path: req.path, operationId, status: res.statusCode, ms }, 'request');
      // The journal never fails a request: what it cannot keep is logged and left out.
      if (answered)
        try {
          control.journal.add({
            at: options.clock.now(),
            method,
            path: req.originalUrl,
            operation: operationId ?? null,
            projectId: req.identity?.projectId ?? null,
            status: res.statusCode,
            ms: Math.round(ms * 10) / 10,
            requestBody: keptBody(req.body, operationId ?? null),
            responseBody: answered(),
            fault: (res.locals.fault as string | undefined) ?? null,
          });
        } catch (err) {
          log.warn({ err, requestId }, 'the request journal could not keep this request');
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
  infra.get('/docs/changes', (_req, res) => void res.type('html').send(changesPage));
  infra.get('/docs/redoc.standalone.js', (_req, res) => res.sendFile(redocBundle));
  infra.use(
    '/console',
    consolePages(() => control.enabled),
  );
  infra.use('/dashboard', dashboardPages());
  // API requests are authenticated; everything else is an infrastructure route (or a 404). One layer for both.
  const auth = authenticate(keys);
  app.use(((req, res, next) => {
    if (!apiPrefixes.some((p) => req.path.startsWith(p))) return infra(req, res, next);
    if (req.path.startsWith(CONTROL_PREFIX)) return authenticateControl(req, next);
    return isSigned(req.method, req.path) ? next() : auth(req, res, next);
  }) as RequestHandler);
  // The control plane takes the control key, never a project's; switched off, its paths do not exist.
  const authenticateControl = (req: express.Request, next: express.NextFunction) => {
    if (!control.enabled) throw noRoute(req);
    const secret = bearerKey(req.get('authorization'));
    if (secret === undefined)
      throw apiError(401, 'missing_api_key', "The control plane takes the control key: send it as 'Authorization: Bearer <control key>'.");
    if (secret === null || !control.accepts(secret))
      throw apiError(401, 'invalid_api_key', 'The control key provided is not valid (a project API key does not open the control plane).');
    next();
  };
  // An operation the spec marks `x-always-refused` (a retired one) answers its handler's refusal before its body is
  // read, so no check of the body comes first (a caller would fix the body only to be refused).
  const retired = matchers.filter((m) => spec.paths[operations[m.operationId].path]?.[operations[m.operationId].method]?.['x-always-refused']);
  if (retired.length)
    app.use((async (req, _res, next) => {
      const operationId = retired.find((m) => m.method === req.method && m.pattern.test(req.path))?.operationId;
      if (!operationId || !req.identity) return next();
      req.resume();
      await (handlers[operationId] as (ctx: unknown) => Promise<unknown>)({ ...services, operationId, params: {}, query: req.query, identity: req.identity });
      next();
    }) as RequestHandler);
  const json = express.json({ limit: config.bodyLimit });
  // Form bodies (the signed upload's POST, as the official client sends it); the contract refuses them elsewhere.
  const form = express.urlencoded({ extended: false, limit: config.bodyLimit });
  const parse: RequestHandler = (req, res, next) => json(req, res, (err) => (err ? next(err) : form(req, res, next)));
  // A request without a body (most GETs) has nothing to parse. A POST, PUT or PATCH without one (or with `Content-Length: 0`) is read as `{}`, so an
  // optional body's schema still applies (its required fields answer 400 naming them) and handlers always get an object.
  const bodiless = new Set(['POST', 'PUT', 'PATCH']);
  app.use(((req, res, next) => {
    const length = req.headers['content-length'];
    if ((length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined) return parse(req, res, next);
    if (bodiless.has(req.method)) req.body = {};
    next();
  }) as RequestHandler);
  // Multipart bodies of the operations that take an upload: text fields to `req.body`, the file streamed to disk.
  app.use(multipartBodies(multipartRules, matchOperation, config, spec, (req) => ({ ...services, identity: req.identity! })));
  app.use(refuseDeepNesting);
  app.use(refuseControlCharacters(pathParamAt));
  app.use(validator(spec, { strict: config.strictRequests }));
  const checkResponse = config.validateResponses ? responseValidator(spec) : undefined;
  const limited = limits.config.enabled ? rateLimitedOperations(spec) : new Map<OperationId, string | undefined>();

  // Dispatch by the operation the validator matched: one lookup per request, not a scan of a route per operation.
  app.use((async (req, res, next) => {
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
    // A fault rule of the control plane (or the request's own `Prefer`) answers before the operation runs.
    const fault =
      control.enabled && identity
        ? control.faults.match(
            {
              operationId,
              path: req.path,
              model: typeof req.body?.model === 'string' ? req.body.model : undefined,
              projectId: identity.projectId,
              stream: req.body?.stream === true,
            },
            options.clock.now(),
            req.get('prefer'),
          )
        : null;
    if (fault) {
      res.locals.fault = fault.source;
      res.setHeader('x-fault-injected', fault.source);
      if (fault.delayMs) await sleep(fault.delayMs);
      if (fault.drop) return void req.socket.destroy();
      if (fault.error) refuse(fault.error);
    }
    const raw = rawRules[operationId];
    const files = raw ? { [raw.field]: await receiveBody(req, res, raw, config) } : ((req as { uploads?: Record<string, Upload> }).uploads ?? {});
    const handler = handlers[operationId] as (ctx: unknown) => Promise<unknown>;
    // A limited request is admitted on its body's `model`, or the default the spec gives it (a multipart body's text
    // fields are parsed by now).
    const gate = limited.has(operationId) ? new Gate(limits, identity, res) : undefined;
    const model = typeof req.body?.model === 'string' ? req.body.model : limited.get(operationId);
    if (gate && model !== undefined) await gate.admit(model, req.body);
    let result: unknown;
    try {
      const origin = originOf(config, req);
      const run = () => handler({ ...services, operationId, params, query: req.query, body: req.body, headers: req.headers, origin, uploads: files, identity });
      // A `fail_job` rule: the job this request creates is marked, as it is scheduled, to fail at its first step.
      result = await (fault?.failJob ? failingWork.run(failedWith(fault.failJob), run) : run());
    } catch (err) {
      gate?.fail();
      throw err;
    }
    gate?.settle(result);
    if (fault?.stream && result instanceof Reply && result.content.kind === 'sse') result.content.fault = fault.stream;
    await send(req, res, result, successStatus[operationId], log, checkResponse && ((status, body) => checkResponse(operationId, status, body)));
  }) as RequestHandler);

  app.use(((req) => {
    throw noRoute(req);
  }) as RequestHandler);
  app.use(resetOnRefusals(limits, limited, (req) => (req as { openapi?: Matched }).openapi?.schema?.operationId ?? matchOperation(req.method, req.path)));
  app.use(errorHandler(log));
  return app;
}
