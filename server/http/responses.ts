// biome-ignore-all lint/suspicious/noExplicitAny: a node of the contract can be any JSON Schema or OpenAPI object.
// Response validation: every JSON body a handler answers is checked against the schema the spec documents for its
// operation and status, before it is sent; a body that drifts from the contract is a server fault (500, the cause
// logged). One Ajv validator per (operation, status), compiled on first use, with the spec itself as the schema
// store. express-openapi-validator's own response hook does the same check, but negotiates the content type and
// looks the validator up again on every response, which cost more than the check itself.

import type { ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { type OperationId, operations } from '../../generated/operations.ts';

const ROOT = 'contract:';
const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

export class ResponseDrift extends Error {}

export function responseValidator(spec: { paths: Record<string, Record<string, any>> }): (operationId: OperationId, status: number, body: unknown) => void {
  // Made on the first response rather than at start: registering the whole spec is about 50 ms of a start.
  let ajv: Ajv2020 | undefined;
  const store = () => {
    if (ajv) return ajv;
    ajv = new Ajv2020({ strict: false, allErrors: false, validateSchema: false });
    // Formats by their shape ('fast': a date-time is checked by one regular expression, not for the days of its month):
    // the bodies are the server's own, and the full checks were most of the validation of a long list (5,000
    // secrets: two date-times each). Requests are still checked in full (validator.ts).
    (addFormats as unknown as (a: Ajv2020, o: { mode: 'fast' }) => void)(ajv, { mode: 'fast' });
    ajv.addSchema({ ...spec, $id: ROOT });
    return ajv;
  };
  const compiled = new Map<string, ValidateFunction | null>();
  const validatorFor = (operationId: OperationId, status: number) => {
    const key = `${operationId} ${status}`;
    let v = compiled.get(key);
    if (v === undefined) {
      const { path, method } = operations[operationId];
      // A response given by reference (`$ref: '#/components/responses/...'`) is validated where it is defined.
      const response = spec.paths[path]?.[method]?.responses?.[String(status)];
      const at: string[] =
        typeof response?.$ref === 'string' ? response.$ref.replace(/^#\//, '').split('/') : ['paths', path, method, 'responses', String(status)];
      const resolved = at.reduce((node: any, key) => node?.[key], spec);
      v = resolved?.content?.['application/json'] ? store().compile({ $ref: `${ROOT}#/${pointer(...at, 'content', 'application/json', 'schema')}` }) : null;
      compiled.set(key, v);
    }
    return v;
  };
  return (operationId, status, body) => {
    const validate = validatorFor(operationId, status);
    if (!validate) throw new ResponseDrift(`${operationId} answered ${status} with a JSON body the spec does not document`);
    if (!validate(body)) throw new ResponseDrift(`${operationId} ${status} response does not match the spec: ${store().errorsText(validate.errors)}`);
  };
}
