// `npm run lint:spec`: Redocly's rules (spec/redocly.yaml) over the merged contract, each problem reported at the
// line of the file the author edits (spec/tags/<name>.yaml or spec/openapi.yaml), not at generated/openapi.json.
// The merged document is written first exactly as `npm run generate` writes it, so the lint always reads spec/.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isMap, isSeq, LineCounter, type Node, parseDocument } from 'yaml';
import { type Contract, mergeContract, SpecSyntaxError, workingTree } from './contract.ts';

const root = process.cwd();
let contract: Contract;
try {
  contract = mergeContract(workingTree(root));
} catch (e) {
  // A file that is not YAML is reported like any other problem, at its line and column.
  if (!(e instanceof SpecSyntaxError)) throw e;
  console.log(`${e.file}:${e.line}:${e.col}  error  yaml-syntax  ${e.reason}\n\n1 error(s), 0 warning(s)`);
  process.exit(1);
}
const merged = join(root, 'generated/openapi.json');
const text = `${JSON.stringify(contract.doc, null, 2)}\n`;
if (readFileSync(merged, 'utf8') !== text) writeFileSync(merged, text);

interface Problem {
  ruleId: string;
  severity: string;
  message: string;
  location: { pointer: string; reportOnKey?: boolean }[];
}
let out: string;
try {
  out = execFileSync(join(root, 'node_modules/.bin/redocly'), ['lint', '--config', 'spec/redocly.yaml', '--format', 'json', 'generated/openapi.json'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
} catch (e) {
  // Redocly exits 1 when it finds problems; its report is still on stdout.
  out = (e as { stdout?: string }).stdout ?? '';
  if (!out.trim().startsWith('{')) throw e;
}
const { problems } = JSON.parse(out) as { problems: Problem[] };

const segments = (pointer: string) =>
  pointer
    .replace(/^#?\/?/, '')
    .split('/')
    .filter((s) => s !== '')
    .map((s) => decodeURIComponent(s).replaceAll('~1', '/').replaceAll('~0', '~'));

/** The file that holds the merged document's `segs`, and the segments to follow inside it. */
function sourceOf(c: Contract, segs: string[]): { file: string; path: string[] } {
  const [section, a, b] = segs;
  if (section === 'paths' && a !== undefined) {
    const file = b !== undefined ? c.sources.get(`paths ${a} ${b}`) : [...c.sources].find(([k]) => k.startsWith(`paths ${a} `))?.[1];
    if (file) return { file, path: segs };
  }
  if (section === 'components' && a !== undefined && b !== undefined) {
    const file = c.sources.get(`components ${a} ${b}`);
    if (file) return { file, path: segs };
  }
  if (section === 'tags' && a !== undefined) {
    const name = c.doc.tags?.[Number(a)]?.name;
    const file = c.sources.get(`tags ${name}`);
    if (file) {
      const own = (parseDocument(readFileSync(join(root, file), 'utf8')).toJS()?.tags ?? []) as { name: string }[];
      return { file, path: ['tags', String(own.findIndex((t) => t.name === name)), ...segs.slice(2)] };
    }
  }
  return { file: 'spec/openapi.yaml', path: segs };
}

/** The line and column of the deepest node of `path` the file has (its key's, when the problem is on the key). */
function position(file: string, path: string[], onKey: boolean): { line: number; col: number } {
  const lines = new LineCounter();
  const doc = parseDocument(readFileSync(join(root, file), 'utf8'), { lineCounter: lines });
  let node: unknown = doc.contents;
  let at = (node as Node | null)?.range?.[0] ?? 0;
  for (const seg of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => String((p.key as { value?: unknown })?.value) === seg);
      if (!pair) break;
      const key = pair.key as Node;
      const value = pair.value as Node | null;
      at = (onKey || !value?.range ? key.range?.[0] : value.range[0]) ?? at;
      node = value;
    } else if (isSeq(node)) {
      const item = node.items[Number(seg)] as Node | undefined;
      if (!item?.range) break;
      at = item.range[0];
      node = item;
    } else break;
  }
  return lines.linePos(at);
}

let errors = 0;
for (const p of problems) {
  const loc = p.location[0];
  const { file, path } = sourceOf(contract, segments(loc?.pointer ?? ''));
  const { line, col } = position(file, path, loc?.reportOnKey ?? false);
  if (p.severity === 'error') errors++;
  console.log(`${file}:${line}:${col}  ${p.severity}  ${p.ruleId}  ${p.message}`);
}
console.log(problems.length ? `\n${errors} error(s), ${problems.length - errors} warning(s)` : 'spec/: no problems (Redocly, spec/redocly.yaml)');
process.exitCode = errors ? 1 : 0;
