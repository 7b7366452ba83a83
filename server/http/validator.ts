// biome-ignore-all lint/suspicious/noExplicitAny: express-openapi-validator's route metadata is untyped.
// Request validation against the contract: express-openapi-validator (pinned), configured here.
//
// Its route lookup (applyOpenApiMetadata) compiles a path-to-regexp for every route of the spec on every request
// and scans them all; profiles showed it as the largest cost of a small request (about 45 µs of whoami's 240). The
// routes never change, so the lookup the validator installs through its own factory method (`metadataMiddleware`
// of its instance) is replaced by the same lookup over a table built once: the same regular expressions from the
// validator's own path-to-regexp, the same `req.openapi`, params and errors (404, 405 with `Allow`, a malformed
// escape). Every error path is covered by the suite (test/errors.test.ts, the fuzz, the auth matrix).
//
// The library's modules by path, as imports (not a `require` made at run time): the start copy's bundle then holds
// them, instead of Node resolving and compiling its 350 CommonJS files on each start (about 190 ms, measured). A
// default import of CommonJS is its `module.exports` in Node and in esbuild (this package is `"type": "module"`), so
// the patches below change the objects the library itself uses. (path-to-regexp is the copy the library resolves
// too: the one installed at the top of node_modules.)
import type { Request, RequestHandler } from 'express';
import oavFramework from 'express-openapi-validator/dist/framework/index.js';
import oavSchemaValidator from 'express-openapi-validator/dist/framework/openapi.schema.validator.js';
import oavSpecLoader from 'express-openapi-validator/dist/framework/openapi.spec.loader.js';
import oavTypes from 'express-openapi-validator/dist/framework/types.js';
import preprocessor from 'express-openapi-validator/dist/middlewares/parsers/schema.preprocessor.js';
import oavUtil from 'express-openapi-validator/dist/middlewares/util.js';
import oavValidator from 'express-openapi-validator/dist/openapi.validator.js';
import { pathToRegexp as compileRoute } from 'path-to-regexp';
import { refResolver } from './spec-ref.ts';
import { ignoredFieldsHeader, Undeclared } from './undeclared.ts';

// Untyped from here on, as the library's route metadata is (see the first line).
const schemaValidator = oavSchemaValidator as any;
const types = oavTypes as any;
const pathToRegexp = compileRoute as any;
const { zipObject } = oavUtil as any;
const { httpMethods, SchemaPreprocessor } = preprocessor as any;
const { OpenAPIFramework } = oavFramework as any;
const { OpenApiSpecLoader } = oavSpecLoader as any;
const { OpenApiValidator } = oavValidator as any;

// Three costs of the library's first request (over 600 ms together, most of a start), for work whose result it
// does not use:
// - it compiles a validator of the OpenAPI 3.1 meta-schema even when told not to validate the document
//   (`validateApiSpec: false`, below: the contract is linted and tested instead), and never calls it then;
// - its spec loader runs json-schema-ref-parser's `bundle` over the document, which only rewrites references to other
//   files: the contract is one file with only local references (`#/...`), for which `bundle` answers the document
//   unchanged (test/package.test.ts checks that), so such a document is taken as it is;
// - its preprocessor resolves each `$ref` with Ajv's `getSchema(ref).schema`, which compiles a validator for the
//   referenced schema (and all it refers to) only to read back the schema object it was given. The lookup below
//   answers that same object: the component schemas as the preprocessor's Ajv registered them (under
//   `#/components/schemas/<id>`, taken before the preprocessor replaces them), else the library's own fallback
//   (the node at the reference's path in the document).
const { OpenAPISchemaValidator } = schemaValidator;
schemaValidator.OpenAPISchemaValidator = class {
  readonly validate: (doc: unknown) => { errors: unknown[] };
  constructor(opts: { validateApiSpec?: boolean }) {
    const real = opts.validateApiSpec ? new OpenAPISchemaValidator(opts) : undefined;
    this.validate = real ? (doc) => real.validate(doc) : () => ({ errors: [] });
  }
};
const loadSpec = OpenAPIFramework.prototype.loadSpec;
// (A `$ref` not starting with `#`, as JSON text: quicker than walking the document.)
const onlyLocalRefs = (doc: object): boolean => !/"\$ref":"(?!#)/.test(JSON.stringify(doc));
OpenAPIFramework.prototype.loadSpec = function (this: unknown, doc: unknown, ...rest: unknown[]) {
  return typeof doc === 'object' && doc !== null && onlyLocalRefs(doc) ? Promise.resolve(doc) : loadSpec.call(this, doc, ...rest);
};
const registered = new WeakMap<object, Map<string, unknown>>();
SchemaPreprocessor.prototype.resolveSchema = function (this: any, schema: any) {
  if (!schema) return null;
  const ref: unknown = schema.$ref;
  if (typeof ref !== 'string') return schema;
  if (this.resolvedSchemaCache.has(ref)) return this.resolvedSchemaCache.get(ref);
  let components = registered.get(this);
  if (!components) {
    components = new Map(Object.entries(this.apiDoc.components?.schemas ?? {}).map(([id, s]) => [`#/components/schemas/${id}`, s]));
    registered.set(this, components);
  }
  const res =
    components.get(ref) ??
    ref
      .split('/')
      .slice(1)
      .reduce((node: any, key) => node?.[key], this.apiDoc);
  this.resolvedSchemaCache.set(ref, res);
  return res;
};

const METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'PATCH', 'TRACE'];

interface Route {
  expressRoute: string;
  openApiRoute: string;
  regexp: RegExp;
  keys: string[];
  schemas: Map<string, { schema: unknown; responseSchema: unknown }>;
}

/** applyOpenApiMetadata of express-openapi-validator 5.6, with the route table built on the first request only. */
function metadata(context: any, responseApiDoc: any): RequestHandler {
  let routes: Route[] | undefined;
  // A path without parameters, spelt exactly as the spec spells it, is found in one lookup (when no route before it
  // in the library's order also matches it, so the answer is the scan's); any other path is found by the scan.
  let exact: Map<string, Route> | undefined;
  const build = (req: any): Route[] =>
    Object.entries<any>(context.expressRouteMap).map(([expressRoute, methods]) => {
      const openApiRoute: string = methods._openApiRoute;
      const pathKey = openApiRoute.substring(methods.basePath.length);
      const { regexp, keys } = pathToRegexp(expressRoute, {
        sensitive: !!req.app.enabled('case sensitive routing'),
        strict: !!req.app.enabled('strict routing'),
      });
      const schemas = new Map(
        METHODS.map((m) => [m, { schema: context.apiDoc.paths[pathKey][m.toLowerCase()], responseSchema: responseApiDoc?.paths[pathKey][m.toLowerCase()] }]),
      );
      return { expressRoute, openApiRoute, regexp, keys: keys.map((k: { name: string }) => k.name), schemas };
    });
  return (req: any, _res, next) => {
    const path = req.path.startsWith(req.baseUrl) ? req.path : `${req.baseUrl}/${req.path}`;
    if (context.shouldIgnoreRoute(path)) return next();
    if (!routes) {
      const built = build(req);
      exact = new Map();
      for (const [i, route] of built.entries())
        if (!route.keys.length && !built.slice(0, i).some((r) => r.regexp.test(route.expressRoute))) exact.set(route.expressRoute, route);
      routes = built;
    }
    const url: string = context.useRequestUrl ? req.url : req.originalUrl;
    const query = url.indexOf('?');
    const requestPath = query < 0 ? url : url.slice(0, query);
    const hit = exact!.get(requestPath);
    for (const route of hit ? [hit] : routes) {
      const match = route.regexp.exec(requestPath);
      if (!match) continue;
      let pathParams: Record<string, string>;
      try {
        pathParams = route.keys.length ? zipObject(route.keys, match.slice(1).map(decodeURIComponent)) : {};
      } catch {
        throw new types.BadRequest({ path: req.path, message: `malformed uri'` });
      }
      const found = route.schemas.get(req.method);
      if (!found?.schema) {
        throw new types.MethodNotAllowed({
          path: req.path,
          message: `${req.method} method not allowed`,
          headers: {
            Allow: Object.keys(context.openApiRouteMap[route.openApiRoute])
              .filter((k) => httpMethods.has(k.toLowerCase()))
              .join(', '),
          },
        });
      }
      req.openapi = { expressRoute: route.expressRoute, openApiRoute: route.openApiRoute, pathParams, schema: found.schema, serial: context.serial };
      req.params = pathParams;
      if (responseApiDoc) req.openapi._responseSchema = found.responseSchema;
      return next();
    }
    if (context.isManagedRoute(path)) throw new types.NotFound({ path: req.path, message: 'not found' });
    next();
  };
}

type Oav = {
  metadataMiddleware: typeof metadata;
  requestValidationMiddleware: (apiDoc: unknown) => RequestHandler;
  installMiddleware: (spec: Promise<unknown>) => RequestHandler[];
};

export interface ValidatorOptions {
  /** `STRICT_REQUESTS=on`: fields a body does not declare are refused (400), not ignored. */
  strict?: boolean;
}

/**
 * Before validation, each request body's undeclared fields are taken out and named (undeclared.ts): in the
 * `x-ignored-fields` response header and on `res.locals.ignoredFields` (the request journal's), unless `strict`.
 */
function openBodies(spec: any, options: ValidatorOptions) {
  const undeclared = new Undeclared(spec);
  const ops = new Map<string, any>();
  for (const item of Object.values<any>(spec.paths)) for (const op of Object.values<any>(item)) if (op?.operationId) ops.set(op.operationId, op);
  const schemaOf = (req: Request, op: any): unknown => {
    const content = (op.requestBody?.$ref ? undeclared.resolve(op.requestBody) : op.requestBody)?.content ?? {};
    const type = Object.keys(content).find((t) => req.is(t));
    return type ? content[type].schema : undefined;
  };
  return (req: Request, res: any): void => {
    const op = ops.get((req as any).openapi?.schema?.operationId);
    if (!op || options.strict || req.body === null || typeof req.body !== 'object') return;
    const schema = schemaOf(req, op);
    if (!schema) return;
    const names = undeclared.take(schema as object, req.body);
    if (names.length) {
      res.locals.ignoredFields = names;
      res.setHeader('x-ignored-fields', ignoredFieldsHeader(names));
    }
  };
}

/**
 * The validator's request checks for `spec`, as one middleware (responses are checked where they are sent:
 * responses.ts). The library installs four layers (path params, route lookup, security, request validation), each
 * waiting on its spec-loading promise on every request; only the lookup and the validation do anything here (no
 * Express route takes path parameters, security is the pipeline's). So the first request goes through the library's
 * layers, which build both (captured below), and every later one calls them directly, in one synchronous step.
 * The instance is made as the library's `middleware()` makes it, but with the spec copied by structuredClone rather
 * than lodash's cloneDeep (a quarter of a second on the 1 MB contract).
 */
export function validator(spec: object, options: ValidatorOptions = {}): RequestHandler {
  const oav: Oav = new OpenApiValidator({
    apiSpec: spec,
    validateRequests: { allowUnknownQueryParameters: false },
    validateResponses: false,
    validateSecurity: false,
    validateApiSpec: false,
    // Multipart bodies are parsed by the operations that take them, not on every request.
    fileUploader: false,
  });
  let lookup: RequestHandler | undefined;
  let validate: RequestHandler | undefined;
  oav.metadataMiddleware = (context, responseApiDoc) => (lookup = metadata(context, responseApiDoc));
  const build = oav.requestValidationMiddleware.bind(oav);
  // The validation middleware compiles each operation's checks on its first request into a schema that embeds the
  // spec's `paths` and `components`, which Ajv walks whole: ~130 ms an operation (a process's first reset paid it).
  // No schema refers into `paths` (the route is found by `metadata`), so it is left out: ~20 ms.
  oav.requestValidationMiddleware = (apiDoc) => (validate = build({ ...(apiDoc as object), paths: {} }));
  const layers = oav.installMiddleware(new OpenApiSpecLoader({ apiDoc: structuredClone(spec), validateApiSpec: false }).load());
  const open = openBodies(spec, options);
  const bare = nothingToCheck(spec);
  const first: RequestHandler = (req, res, next) => {
    let i = 0;
    const step = (err?: unknown): void => {
      if (err || i === layers.length) next(err);
      else {
        // The last layer validates: the body is opened between the route lookup and it.
        if (i === layers.length - 1) open(req, res);
        layers[i++]!(req, res, step);
      }
    };
    step();
  };
  return (req, res, next) => {
    if (!lookup || !validate) return first(req, res, next);
    try {
      lookup(req, res, (err?: unknown) => {
        if (err) return next(err);
        if (req.body === undefined && !req.url.includes('?') && bare.has((req as any).openapi?.schema?.operationId)) return next();
        try {
          open(req, res);
          validate!(req, res, next);
        } catch (e) {
          next(e);
        }
      });
    } catch (e) {
      next(e);
    }
  };
}

/**
 * The operations whose checks a request can fail only through a query or a body it sends: none of their parameters is
 * in the path, a header or a cookie, required, or given a default (which validation would fill in), and they take no
 * body. A request to one of them with no query string and no body (whoami, the hardware list) passes validation
 * unchanged, so it is not run.
 */
function nothingToCheck(spec: any): Set<string> {
  const resolve = refResolver(spec);
  const bare = new Set<string>();
  for (const item of Object.values<any>(spec.paths))
    for (const op of Object.values<any>(item)) {
      if (!op?.operationId || op.requestBody) continue;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map(resolve);
      if (params.every((p) => p.in === 'query' && !p.required && resolve(p.schema)?.default === undefined)) bare.add(op.operationId);
    }
  return bare;
}
