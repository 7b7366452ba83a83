// One input line read as the request it carries: the checks a single request gets from the pipeline (nesting
// depth, the operation's request schema with its defaults, as express-openapi-validator applies them) and the
// batch's own (custom_id, method, url, model_id, no streaming). Every refusal is the ApiError the single request
// would answer, which becomes the line's error.
import { readFileSync } from 'node:fs';
import type { ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { Batch } from '../../../generated/prisma/sqlite/client/client.ts';
import { type ApiError, badRequest } from '../../core/errors.ts';
import { specPath } from '../../core/paths.ts';
import { MAX_BODY_DEPTH, tooDeep } from '../../http/input.ts';
import { Undeclared } from '../../http/undeclared.ts';

// biome-ignore lint/suspicious/noExplicitAny: a request body, checked below.
export type Body = Record<string, any>;
export interface Request {
  customId: string;
  body: Body;
}

// Each endpoint a batch runs, and its request schema in the contract.
const SCHEMA = {
  '/v1/chat/completions': 'ChatCompletionRequest',
  '/v1/audio/transcriptions': 'AudioTranscriptionRequest',
  '/v1/audio/translations': 'AudioTranslationRequest',
} as const;
const validators = new Map<string, ValidateFunction>();
let contract: Undeclared | undefined;

/** The endpoint's request schema from the contract, compiled once (Ajv 2020, as the spec is OpenAPI 3.1). */
function validatorFor(schema: string): ValidateFunction {
  let v = validators.get(schema);
  if (!v) {
    const ajv = new Ajv2020({ strict: false, allErrors: false, validateSchema: false, useDefaults: true });
    (addFormats as unknown as (a: Ajv2020, o: { mode: 'fast' }) => void)(ajv, { mode: 'fast' });
    ajv.addSchema({ ...JSON.parse(readFileSync(specPath, 'utf8')), $id: 'spec' });
    v = ajv.compile({ $ref: `spec#/components/schemas/${schema}` });
    validators.set(schema, v);
  }
  return v;
}

const isObject = (v: unknown): v is Body => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The line's `custom_id` if it has a usable one (for its error line), else null. */
export function customIdIn(parsed: unknown): string | null {
  return isObject(parsed) && typeof parsed.custom_id === 'string' ? parsed.custom_id : null;
}

/**
 * The request of a parsed line, or the error the line answers. As a single request's body, a line's body is open
 * (http/undeclared.ts): fields the contract does not declare are left out, unless `strict` (STRICT_REQUESTS).
 */
export function requestOf(row: Batch, parsed: unknown, duplicate: boolean, strict = false): Request {
  if (!isObject(parsed)) throw badRequest('A line must be a JSON object: {"custom_id", "body"}.', null, 'invalid_line');
  const { custom_id: customId, body, method, url } = parsed;
  if (typeof customId !== 'string' || customId.length < 1 || customId.length > 64)
    throw badRequest("'custom_id' must be a string of 1 to 64 characters.", 'custom_id', 'invalid_custom_id');
  if (duplicate) throw badRequest(`'custom_id' '${customId}' repeats an earlier line's: each must be unique in the file.`, 'custom_id', 'duplicate_custom_id');
  if (method !== undefined && method !== 'POST') throw badRequest("'method' must be POST.", 'method', 'invalid_method');
  if (url !== undefined && url !== row.endpoint) throw badRequest(`'url' must be the batch's endpoint, ${row.endpoint}.`, 'url', 'invalid_url');
  if (!isObject(body)) throw badRequest("'body' must be the request object the endpoint takes.", 'body', 'invalid_body');
  const schema = SCHEMA[row.endpoint as keyof typeof SCHEMA];
  const deep = tooDeep(body);
  if (deep)
    throw badRequest(
      `'body' nests objects and arrays more than ${MAX_BODY_DEPTH} levels deep.`,
      deep.param === null ? 'body' : `body.${deep.param}`,
      'nesting_too_deep',
    );
  if (row.modelId !== null) {
    if (body.model === undefined) body.model = row.modelId;
    else if (body.model !== row.modelId)
      throw badRequest(`'body.model' must be the batch's model_id, ${row.modelId} (or be left out).`, 'body.model', 'model_mismatch');
  }
  if (body.stream === true) throw badRequest("A batch line is answered whole: 'body.stream' must not be true.", 'body.stream', 'stream_not_supported');
  if (!strict) {
    contract ??= new Undeclared(JSON.parse(readFileSync(specPath, 'utf8')));
    contract.take({ $ref: `#/components/schemas/${schema}` }, body);
  }
  const validate = validatorFor(schema);
  if (!validate(body)) throw schemaError(validate);
  return { customId, body };
}

/** The first schema error as the pipeline words it: the field as a dotted path under `body`, the keyword as the code. */
function schemaError(validate: ValidateFunction): ApiError {
  const e = validate.errors![0]!;
  const path = e.instancePath.split('/').filter(Boolean);
  if (e.keyword === 'required') path.push(String((e.params as { missingProperty: string }).missingProperty));
  if (e.keyword === 'additionalProperties') path.push(String((e.params as { additionalProperty: string }).additionalProperty));
  const param = ['body', ...path].join('.');
  return badRequest(`'${param}' ${e.message ?? 'is not valid'}.`, param, e.keyword);
}
