// The generated operation table, with what the generic contract tests need to call any operation.
import { operations, type OperationId } from '../../generated/operations.ts';
import { readFileSync } from 'node:fs';
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
    const target = $ref.replace(/^#\//, '').split('/').reduce((node: any, key: string) => node[key.replace(/~1/g, '/').replace(/~0/g, '~')], spec);
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
