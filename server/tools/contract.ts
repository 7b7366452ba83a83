// biome-ignore-all lint/suspicious/noExplicitAny: the merged contract is walked as plain JSON.
// The contract as one document: spec/openapi.yaml plus one file per tag (its `tags`, `paths` and `components`),
// merged. `npm run generate` writes it to generated/openapi.json; `npm run spec:diff` merges it as it was at a git
// ref; `npm run lint:spec` uses `sources` to report a problem at the file that holds it.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml, YAMLError } from 'yaml';

export type Doc = Record<string, any>;

/** Where the spec's files are read from: the working tree of `root`, or a git ref of the repository at `root`. */
export interface SpecFiles {
  /** The text of `spec/openapi.yaml` or `spec/tags/<name>.yaml`. */
  read(path: string): string;
  /** The tag files, as `spec/tags/<name>.yaml`, sorted. */
  tags(): string[];
}

export const workingTree = (root: string): SpecFiles => ({
  read: (path) => readFileSync(join(root, path), 'utf8'),
  tags: () =>
    readdirSync(join(root, 'spec/tags'))
      .filter((f) => f.endsWith('.yaml'))
      .sort()
      .map((f) => `spec/tags/${f}`),
});

export const gitRef = (root: string, ref: string): SpecFiles => {
  const git = (...args: string[]) => execFileSync('git', ['-C', root, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
  return {
    read: (path) => git('show', `${ref}:${path}`),
    tags: () =>
      git('ls-tree', '--name-only', `${ref}`, 'spec/tags/')
        .split('\n')
        .filter((f) => f.endsWith('.yaml'))
        .sort(),
  };
};

export interface Contract {
  doc: Doc;
  /** Each operationId's tag file name (without `.yaml`): also its folder in server/modules/. */
  moduleOf: Map<string, string>;
  /** The file each merged entry was written in: `paths <path> <method>`, `components <section> <name>`, `tags <name>`. */
  sources: Map<string, string>;
}

/** A spec file that is not YAML: where (1-based line and column) and why, in the parser's first line. */
export class SpecSyntaxError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly col: number,
    readonly reason: string,
  ) {
    super(`${file}:${line}:${col}  ${reason}`);
  }
}

/** A spec file's document; a YAML syntax error names the file, its line and column. */
function parse(file: string, text: string): Doc {
  try {
    return parseYaml(text);
  } catch (e) {
    if (!(e instanceof YAMLError)) throw e;
    const at = e.linePos?.[0] ?? { line: 1, col: 1 };
    throw new SpecSyntaxError(file, at.line, at.col, e.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, ''));
  }
}

export function mergeContract(files: SpecFiles): Contract {
  const doc: Doc = parse('spec/openapi.yaml', files.read('spec/openapi.yaml'));
  const moduleOf = new Map<string, string>();
  const sources = new Map<string, string>();
  doc.tags ??= [];
  doc.paths ??= {};
  for (const file of files.tags()) {
    const part: Doc = parse(file, files.read(file)) ?? {};
    for (const tag of part.tags ?? []) sources.set(`tags ${tag.name}`, file);
    doc.tags.push(...(part.tags ?? []));
    for (const [path, item] of Object.entries<Doc>(part.paths ?? {})) {
      doc.paths[path] ??= {};
      const existing = doc.paths[path];
      for (const [method, op] of Object.entries<Doc>(item)) {
        if (existing[method]) throw new Error(`${file}: ${method.toUpperCase()} ${path} is defined twice`);
        existing[method] = op;
        sources.set(`paths ${path} ${method}`, file);
        moduleOf.set(op.operationId, file.replace(/^spec\/tags\//, '').replace(/\.yaml$/, ''));
      }
    }
    for (const [section, entries] of Object.entries<Doc>(part.components ?? {})) {
      doc.components ??= {};
      doc.components[section] ??= {};
      const target = doc.components[section];
      for (const [name, value] of Object.entries(entries)) {
        if (target[name]) throw new Error(`${file}: components.${section}.${name} is defined twice`);
        target[name] = value;
        sources.set(`components ${section} ${name}`, file);
      }
    }
  }
  doc.paths = Object.fromEntries(Object.entries(doc.paths).sort(([a], [b]) => a.localeCompare(b)));
  documentIgnoredFields(doc);
  return { doc, moduleOf, sources };
}

/** A local `$ref` followed. */
const resolve = (doc: Doc, node: any): any =>
  typeof node?.$ref === 'string'
    ? node.$ref
        .replace(/^#\//, '')
        .split('/')
        .reduce((x: any, k: string) => x?.[k], doc)
    : node;

/**
 * Request bodies are open unless their schema says `x-closed` (the description's "Open request bodies"; the server's
 * http/undeclared.ts): each operation taking an open body documents the `x-ignored-fields` header on its successes.
 */
function documentIgnoredFields(doc: Doc): void {
  // A contract from before open bodies (an older ref that spec:diff merges) declares no such header.
  if (!doc.components?.headers?.['X-Ignored-Fields']) return;
  for (const item of Object.values<Doc>(doc.paths)) {
    for (const op of Object.values<Doc>(item)) {
      const body = resolve(doc, op?.requestBody);
      if (!body || op['x-always-refused']) continue;
      if (Object.values<Doc>(body.content ?? {}).every((c) => resolve(doc, c.schema)?.['x-closed'] === true)) continue;
      for (const [status, response] of Object.entries<Doc>(op.responses ?? {})) {
        if (!/^2\d\d$/.test(status)) continue;
        const target = resolve(doc, response);
        target.headers = { ...target.headers, 'x-ignored-fields': { $ref: '#/components/headers/X-Ignored-Fields' } };
      }
    }
  }
}
