// The generated operation table, with what the generic contract tests need to call any operation.

import { readFileSync } from 'node:fs';
import { type OperationId, operations } from '../../generated/operations.ts';
import { specPath } from '../../server/core/paths.ts';

export const spec = JSON.parse(readFileSync(specPath, 'utf8'));
export const operationIds = Object.keys(operations) as OperationId[];

export function operationSpec(id: OperationId): any {
  const { method, path } = operations[id];
  return spec.paths[path][method];
}

/** Resolves local `$ref`s (one level at a time, as needed). */
export function deref(schema: any): any {
  while (schema && typeof schema === 'object' && typeof schema.$ref === 'string') {
    const { $ref, ...siblings } = schema;
    const target = $ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((node: any, key: string) => node[key.replace(/~1/g, '/').replace(/~0/g, '~')], spec);
    schema = { ...target, ...siblings };
  }
  return schema;
}

export function pathParamNames(id: OperationId): string[] {
  return [...operations[id].path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
}

export function fillPath(id: OperationId, params: Record<string, string>): string {
  return operations[id].path.replace(/\{(\w+)\}/g, (_, name) => encodeURIComponent(params[name] ?? `missing-${name}`));
}

/** The schema of an operation's multipart body (uploads), if it takes one. */
export function multipartBodySchema(id: OperationId): any | undefined {
  const body = deref(operationSpec(id).requestBody);
  return body?.content?.['multipart/form-data']?.schema;
}

export function jsonBodySchema(id: OperationId): any | undefined {
  const body = deref(operationSpec(id).requestBody);
  return body?.content?.['application/json']?.schema;
}

/** Whether the spec authorises the operation otherwise than by a bearer key (a signed URL). */
export function keyless(id: OperationId): boolean {
  const security: Record<string, unknown>[] | undefined = operationSpec(id).security;
  return security !== undefined && !security.some((s) => 'bearerAuth' in s || 'controlKey' in s);
}

/** Whether the operation is the control plane's: it takes the control key, and belongs to no project. */
export function controlled(id: OperationId): boolean {
  return (operationSpec(id).security ?? []).some((s: Record<string, unknown>) => 'controlKey' in s);
}

/**
 * For an operation whose body is multipart only: a valid form (each text field's sample, in schema order, then a
 * small file for each binary field) added to a supertest request; for one whose body is the file itself
 * (`application/octet-stream`), a small file. Other operations' requests are returned as they are.
 */
export function withMultipart<
  R extends {
    field(name: string, value: string): R;
    attach(name: string, file: Buffer, filename: string): R;
    set(name: string, value: string): R;
    send(body: Buffer): R;
  },
>(id: OperationId, req: R, sample: (schema: any) => unknown): R {
  const body = deref(operationSpec(id).requestBody);
  if (body?.content?.['application/octet-stream'] && Object.keys(body.content).length === 1)
    return req.set('Content-Type', 'application/octet-stream').send(Buffer.from('{"text": "x"}\n'));
  const schema = deref(body?.content?.['multipart/form-data']?.schema);
  if (!schema || body?.content?.['application/json']) return req;
  const props = Object.entries<any>(schema.properties ?? {}).map(([name, s]) => [name, deref(s)] as const);
  for (const [name, s] of props) if (s.format !== 'binary') req = req.field(name, String(sample(s)));
  for (const [name, s] of props) if (s.format === 'binary') req = req.attach(name, Buffer.from('{"text": "x"}\n'), 'sample.jsonl');
  return req;
}
