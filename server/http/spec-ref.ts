// biome-ignore-all lint/suspicious/noExplicitAny: a node of the contract can be any JSON Schema or OpenAPI object.
// Following a local `$ref` of the contract (`#/components/...`) to the node it names, for the pipeline's pieces that
// read schemas from the spec at start (multipart field types, rate-limited operations' default model).
export type SpecDocument = { paths: Record<string, Record<string, any>> };

/** A resolver over `spec`: a node without `$ref` is itself; chains of `$ref`s are followed to the end. */
export function refResolver(spec: SpecDocument): (node: any) => any {
  const resolve = (node: any): any =>
    typeof node?.$ref === 'string'
      ? resolve(
          node.$ref
            .replace(/^#\//, '')
            .split('/')
            .reduce((n: any, k: string) => n?.[k], spec),
        )
      : node;
  return resolve;
}
