// biome-ignore-all lint/suspicious/noExplicitAny: the merged contract is walked as plain JSON.
// The contract as one document: spec/openapi.yaml plus one file per tag (its `tags`, `paths` and `components`),
// merged. `npm run generate` writes it to generated/openapi.json; `npm run spec:diff` merges it as it was at a git
// ref; `npm run lint:spec` uses `sources` to report a problem at the file that holds it.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

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

export function mergeContract(files: SpecFiles): Contract {
  const doc: Doc = parse(files.read('spec/openapi.yaml'));
  const moduleOf = new Map<string, string>();
  const sources = new Map<string, string>();
  doc.tags ??= [];
  doc.paths ??= {};
  for (const file of files.tags()) {
    const part: Doc = parse(files.read(file)) ?? {};
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
  return { doc, moduleOf, sources };
}
