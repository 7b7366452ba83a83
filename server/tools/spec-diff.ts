// biome-ignore-all lint/suspicious/noExplicitAny: contracts are walked as plain JSON.
// `npm run spec:diff -- [<base ref> [<head ref>]] [--check] [--changelog]`: what a change to spec/ does to clients.
//
// Compares the contract merged at a git ref (default: the last release tag `v*`, else the previous commit) with the
// working tree (or a head ref), with api-smart-diff, and prints a review report in Markdown: per operation, every added, removed and
// changed parameter, request field, response field, enum value, limit, status code and security requirement, each
// classified for clients as breaking or not. `--check` (CI) fails on a breaking change unless `info.version` changes
// major or spec/accepted-breaks.yaml lists it with its reason. `--changelog` writes the current version's section of
// CHANGELOG.md from the report against the last commit of the previous version.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiCompare } from 'api-smart-diff';
import { parse } from 'yaml';
import { type Doc, gitRef, mergeContract, workingTree } from './contract.ts';

export type Kind = 'breaking' | 'not breaking' | 'documentation';
export interface Change {
  kind: Kind;
  action: 'add' | 'remove' | 'replace' | 'rename';
  /** `GET /v1/files`, or the part of the document outside operations (`security`, `info`, ...). */
  where: string;
  /** What changed, in words: `response 200 field \`status\`: removed`. */
  what: string;
  /** JSON pointer into the merged contract: the key of spec/accepted-breaks.yaml. */
  pointer: string;
}

const METHODS = new Set(['get', 'put', 'post', 'patch', 'delete', 'head', 'options', 'trace']);
const pointerOf = (path: (string | number)[]) => `/${path.map((s) => String(s).replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;
const show = (v: unknown) => (v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));
const clip = (s: string) => (s.length > 80 ? `${s.slice(0, 77)}...` : s);
// Keywords that narrow or widen what a value may be.
const LIMITS = new Set([
  'maxLength',
  'minLength',
  'maximum',
  'minimum',
  'exclusiveMaximum',
  'exclusiveMinimum',
  'maxItems',
  'minItems',
  'pattern',
  'format',
  'multipleOf',
  'maxProperties',
  'minProperties',
]);

/** The field a schema path names (`a.b[].c`), and the keyword after it. */
function fieldPath(parts: (string | number)[]): { field: string; rest: (string | number)[] } {
  const names: string[] = [];
  let i = 0;
  for (; i < parts.length; i++) {
    const p = parts[i];
    if (p === 'properties' && i + 1 < parts.length) names.push(String(parts[++i]));
    else if (p === 'items') names.push('[]');
    else if (p === 'allOf' || p === 'anyOf' || p === 'oneOf') i++;
    else if (p === 'additionalProperties') names.push('*');
    else break;
  }
  return { field: names.join('.').replaceAll('.[]', '[]'), rest: parts.slice(i) };
}

/** A request body's or response's place past `content/<media type>/schema`: the media type named, the schema path. */
function inContent(where: string, rest: (string | number)[]): [string, (string | number)[]] {
  if (rest[0] !== 'content') return [where, rest];
  return [`${where} (${rest[1]})`, rest[2] === 'schema' ? rest.slice(3) : rest.slice(2)];
}

/** A diff's place inside an operation, in words. */
function describe(parts: (string | number)[], op: { before?: Doc; after?: Doc }, action: string, before: unknown, after: unknown): string {
  let where: string;
  let schemaParts: (string | number)[] = [];
  if (parts[0] === 'parameters') {
    const p = (op.after?.parameters?.[parts[1] as number] ?? op.before?.parameters?.[parts[1] as number]) as Doc | undefined;
    where = `parameter \`${p?.name ?? parts[1]}\` (${p?.in ?? '?'})`;
    schemaParts = parts.slice(2);
    if (schemaParts[0] === 'schema') schemaParts = schemaParts.slice(1);
  } else if (parts[0] === 'requestBody') {
    [where, schemaParts] = inContent('request body', parts.slice(1));
  } else if (parts[0] === 'responses') {
    [where, schemaParts] = inContent(parts.length > 1 ? `response ${parts[1]}` : 'responses', parts.slice(2));
    if (parts[2] === 'headers') {
      where += ` header \`${schemaParts[1]}\``;
      schemaParts = schemaParts.slice(3);
    }
  } else if (parts.length === 0) {
    return `operation ${action === 'add' ? 'added' : action === 'remove' ? 'removed' : 'changed'}`;
  } else {
    where = String(parts[0]);
    schemaParts = parts.slice(1);
  }
  const { field, rest } = fieldPath(schemaParts);
  const subject = field ? `${where} field \`${field}\`` : where;
  const [keyword] = rest;
  if (keyword === 'enum') {
    const value = action === 'add' ? after : before;
    return `${subject}: enum value \`${show(value)}\` ${action === 'add' ? 'added' : action === 'remove' ? 'removed' : 'replaced'}`;
  }
  if (keyword === 'required' && rest.length > 1) {
    const name = show(action === 'remove' ? before : after);
    return `${where}${field ? ` \`${field}\`` : ''}: \`${name}\` ${action === 'add' ? 'now required' : action === 'remove' ? 'no longer required' : 'required changed'}`;
  }
  if (keyword !== undefined && (LIMITS.has(String(keyword)) || keyword === 'type' || keyword === 'default' || keyword === 'nullable')) {
    if (action === 'replace') return `${subject}: \`${keyword}\` ${clip(show(before))} → ${clip(show(after))}`;
    return `${subject}: \`${keyword}\` ${action === 'add' ? `${clip(show(after))} added` : `${clip(show(before))} removed`}`;
  }
  if (keyword === 'description' || keyword === 'summary' || keyword === 'example' || keyword === 'examples' || keyword === 'title') {
    return `${subject}: ${keyword} ${action === 'add' ? 'added' : action === 'remove' ? 'removed' : 'changed'}`;
  }
  if (rest.length === 0) return `${subject} ${action === 'add' ? 'added' : action === 'remove' ? 'removed' : 'changed'}`;
  return `${subject}: \`${rest.join('/')}\` ${action === 'add' ? 'added' : action === 'remove' ? 'removed' : 'changed'}`;
}

/** The alternatives of security requirements an operation accepts (its own, else the document's). */
const securityOf = (doc: Doc, op: Doc | undefined): string[] => {
  const alternatives = (op?.security ?? doc.security ?? []) as Doc[];
  // No requirement at all means anyone may call: the empty alternative.
  return alternatives.length ? alternatives.map((r) => Object.keys(r).sort().join('+')).sort() : [''];
};

/**
 * Every change from `before` to `after` that a client or a reviewer sees. The library's classification is kept,
 * except where a client reads responses: a removed response field, a field no longer required in a response, and
 * a changed type in a response break clients that read them, whatever the library says. Schemas are compared where
 * operations use them (the library resolves `$ref`s), so `components.schemas` is not reported on its own.
 */
export function compare(before: Doc, after: Doc): Change[] {
  const { diffs } = apiCompare(before, after);
  const changes: Change[] = [];
  for (const d of diffs as any[]) {
    const path = d.path as (string | number)[];
    if (path[0] === 'components' && path[1] !== 'securitySchemes') continue;
    if (path[0] === 'security') continue; // Judged per operation below.
    let kind: Kind = d.type === 'breaking' ? 'breaking' : d.type === 'annotation' || d.type === 'unclassified' ? 'documentation' : 'not breaking';
    let where = String(path[0]);
    let what: string;
    if (path[0] === 'paths' && path.length >= 3 && METHODS.has(String(path[2]))) {
      const [, p, m] = path as string[];
      const op = { before: before.paths?.[p]?.[m], after: after.paths?.[p]?.[m] };
      where = `${m.toUpperCase()} ${p}`;
      const rest = path.slice(3);
      if (rest[0] === 'security') continue; // Judged per operation below.
      what = describe(rest, op, d.action, d.before, d.after);
      if (rest[0] === 'responses') {
        const keyword = fieldPath(rest.slice(rest[2] === 'content' ? 5 : 2)).rest;
        const removedField = d.action === 'remove' && keyword.length === 0 && rest.includes('properties');
        const unrequired = d.action === 'remove' && keyword[0] === 'required';
        const retyped = d.action === 'replace' && keyword[0] === 'type';
        if (removedField || unrequired || retyped) kind = 'breaking';
      }
      if (rest[0] === 'deprecated' && d.after === true) kind = 'not breaking';
    } else if (path[0] === 'paths' && path.length === 2) {
      where = String(path[1]);
      what = `path ${d.action === 'add' ? 'added' : d.action === 'remove' ? 'removed' : 'changed'}`;
    } else {
      const tag = path[0] === 'tags' ? (after.tags?.[path[1] as number] ?? before.tags?.[path[1] as number])?.name : undefined;
      where = tag ? `tag ${tag}` : path.slice(0, 2).join('.');
      const field = path.slice(tag ? 2 : 0).join('.') || 'tag';
      const text = typeof (d.before ?? d.after) === 'string' && String(d.before ?? d.after).length > 40;
      what = `\`${field}\` ${d.action === 'add' ? 'added' : d.action === 'remove' ? 'removed' : 'changed'}${d.action === 'replace' && !text ? `: ${clip(show(d.before))} → ${clip(show(d.after))}` : ''}`;
    }
    changes.push({ kind, action: d.action, where, what, pointer: pointerOf(path) });
  }
  // Security, per operation present in both: breaking when a way a client authenticated before is gone.
  for (const [p, item] of Object.entries<Doc>(after.paths ?? {})) {
    for (const m of Object.keys(item).filter((k) => METHODS.has(k))) {
      const was = before.paths?.[p]?.[m];
      if (!was) continue;
      const a = securityOf(after, item[m]);
      const b = securityOf(before, was);
      if (a.join(',') === b.join(',')) continue;
      // A client that authenticated one way before must still be able to: its alternative, or none, remains.
      const lost = b.filter((alt) => !a.includes(alt) && !a.includes(''));
      changes.push({
        kind: lost.length ? 'breaking' : 'not breaking',
        action: 'replace',
        where: `${m.toUpperCase()} ${p}`,
        what: `security: ${b.map((s) => s || 'none').join(' or ')} → ${a.map((s) => s || 'none').join(' or ')}`,
        pointer: pointerOf(['paths', p, m, 'security']),
      });
    }
  }
  return changes;
}

const ORDER: Kind[] = ['breaking', 'not breaking', 'documentation'];
const HEADINGS: Record<Kind, string> = { breaking: 'Breaking', 'not breaking': 'Not breaking', documentation: 'Documentation only' };

/** The review report: counts, then each kind's changes grouped by operation. */
export function report(changes: Change[], title: string, versions: { before?: string; after?: string }): string {
  const count = (k: Kind) => changes.filter((c) => c.kind === k).length;
  const lines = [`## Contract changes: ${title}`, ''];
  if (versions.before !== versions.after) lines.push(`\`info.version\`: ${versions.before ?? 'none'} → ${versions.after}`, '');
  if (!changes.length) return [...lines, 'No change to the contract.', ''].join('\n');
  lines.push(`**${count('breaking')} breaking**, ${count('not breaking')} not breaking, ${count('documentation')} documentation only.`, '');
  for (const kind of ORDER) {
    const mine = changes.filter((c) => c.kind === kind);
    if (!mine.length) continue;
    lines.push(`### ${HEADINGS[kind]}`, '');
    const byWhere = new Map<string, Change[]>();
    for (const c of mine) byWhere.set(c.where, [...(byWhere.get(c.where) ?? []), c]);
    for (const [where, list] of [...byWhere].sort(([a], [b]) => a.localeCompare(b))) {
      lines.push(`- \`${where}\``);
      for (const c of list) lines.push(`  - ${c.what}${kind === 'breaking' ? ` (\`${c.pointer}\`)` : ''}`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

export interface AcceptedBreak {
  pointer: string;
  reason: string;
}
/** spec/accepted-breaks.yaml: breaking changes made on purpose, each with its reason. */
export function acceptedBreaks(root: string): AcceptedBreak[] {
  const file = join(root, 'spec/accepted-breaks.yaml');
  if (!existsSync(file)) return [];
  const list = (parse(readFileSync(file, 'utf8')) ?? []) as AcceptedBreak[];
  for (const [i, e] of list.entries()) {
    if (typeof e?.pointer !== 'string' || typeof e?.reason !== 'string' || !e.reason.trim()) {
      throw new Error(`spec/accepted-breaks.yaml entry ${i + 1}: needs a pointer and a reason`);
    }
  }
  return list;
}

const major = (v: unknown) => Number(String(v ?? '0').split('.')[0]);

/** The breaking changes CI refuses: none when the major version rises; else those no accepted entry lists. */
export function refused(changes: Change[], versions: { before?: string; after?: string }, accepted: AcceptedBreak[]): Change[] {
  if (versions.before !== undefined && major(versions.after) > major(versions.before)) return [];
  return changes.filter((c) => c.kind === 'breaking' && !accepted.some((a) => a.pointer === c.pointer));
}

// The changelog: Keep a Changelog's categories, from the report against the previous version.
export function changelogSection(version: string, date: string, changes: Change[], first: Doc | null): string {
  const lines = [`## [${version}] - ${date}`, ''];
  if (first) {
    const ops = Object.values<Doc>(first.paths ?? {}).flatMap((item) => Object.keys(item).filter((k) => METHODS.has(k)));
    const tags = (first.tags ?? []).map((t: Doc) => t.name).join(', ');
    lines.push('### Added', '', `- The contract: ${ops.length} operations in ${first.tags?.length ?? 0} tags (${tags}).`, '');
    return lines.join('\n');
  }
  const groups: Record<string, string[]> = { Added: [], Changed: [], Deprecated: [], Removed: [] };
  for (const c of changes.filter((x) => x.kind !== 'documentation')) {
    const line = `- ${c.kind === 'breaking' ? '**Breaking:** ' : ''}\`${c.where}\`: ${c.what}`;
    const group = c.what.includes('deprecated') ? 'Deprecated' : c.action === 'add' ? 'Added' : c.action === 'remove' ? 'Removed' : 'Changed';
    groups[group].push(line);
  }
  const docs = changes.filter((x) => x.kind === 'documentation').length;
  if (docs) groups.Changed.push(`- Documentation: ${docs} descriptions, summaries or examples.`);
  for (const [name, list] of Object.entries(groups)) if (list.length) lines.push(`### ${name}`, '', ...list, '');
  if (lines.length === 2) lines.push('No change to the contract.', '');
  return lines.join('\n');
}

const HEADER = `# Changelog

Changes to the contract (spec/), one section per contract version (\`info.version\`, which the client package's
version follows), newest first. The form is [Keep a Changelog](https://keepachangelog.com/en/1.1.0/); sections are
written by \`npm run spec:diff -- --changelog\` from the contract's history.
`;

/** CHANGELOG.md with `section` in place of its version's section (or first, when it has none). */
export function withSection(existing: string | null, version: string, section: string): string {
  const body = existing ?? HEADER;
  const parts = body.split(/^(?=## \[)/m);
  const head = parts[0].trimEnd();
  const sections = parts.slice(1).filter((s) => !s.startsWith(`## [${version}]`));
  return `${[head, section.trimEnd(), ...sections.map((s) => s.trimEnd())].join('\n\n')}\n`;
}

// The command.
function main(argv: string[]) {
  const root = process.cwd();
  const flags = new Set(argv.filter((a) => a.startsWith('--')));
  const [refArg, headArg] = argv.filter((a) => !a.startsWith('--'));
  const git = (...args: string[]) => execFileSync('git', ['-C', root, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  const tryGit = (...args: string[]) => {
    try {
      return git(...args);
    } catch {
      return null;
    }
  };
  const after = mergeContract(headArg ? gitRef(root, headArg) : workingTree(root)).doc;

  if (flags.has('--changelog')) {
    // The previous version's last commit: the newest commit whose contract has another info.version.
    const commits = (tryGit('log', '--format=%H', '--', 'spec/openapi.yaml') ?? '').split('\n').filter(Boolean);
    const base = commits.find((c) => String(parse(git('show', `${c}:spec/openapi.yaml`))?.info?.version) !== String(after.info.version));
    const changes = base ? compare(mergeContract(gitRef(root, base)).doc, after) : [];
    const date = (tryGit('log', '-1', '--format=%cs', '--', 'spec/') || new Date().toISOString().slice(0, 10)) as string;
    const file = join(root, 'CHANGELOG.md');
    const section = changelogSection(String(after.info.version), date, changes, base ? null : after);
    writeFileSync(file, withSection(existsSync(file) ? readFileSync(file, 'utf8') : null, String(after.info.version), section));
    console.log(`CHANGELOG.md: the section of ${after.info.version}${base ? ` (against ${base.slice(0, 7)})` : ' (the first version)'}`);
    return;
  }

  const ref = refArg ?? tryGit('describe', '--tags', '--abbrev=0', '--match', 'v*') ?? (tryGit('rev-parse', '--verify', '--quiet', 'HEAD~1') ? 'HEAD~1' : null);
  if (!ref || !tryGit('rev-parse', '--verify', '--quiet', `${ref}^{commit}`)) {
    console.log(`spec:diff: no base to compare with (${ref ?? 'no previous commit'}); nothing to check.`);
    return;
  }
  let before: Doc;
  try {
    before = mergeContract(gitRef(root, ref)).doc;
  } catch {
    console.log(`spec:diff: ${ref} has no contract in spec/; nothing to compare.`);
    return;
  }
  const versions = { before: before.info?.version, after: after.info?.version };
  const changes = compare(before, after);
  console.log(report(changes, `${ref} → ${headArg ?? 'working tree'}`, versions));
  if (!flags.has('--check')) return;
  const accepted = acceptedBreaks(root);
  const refusals = refused(changes, versions, accepted);
  if (refusals.length) {
    console.error(
      `spec:diff --check: ${refusals.length} breaking change(s) without a major version or an entry in spec/accepted-breaks.yaml:\n` +
        refusals.map((c) => `  ${c.where}: ${c.what}\n    pointer: ${c.pointer}`).join('\n') +
        "\nRaise info.version's major, or list each pointer with its reason in spec/accepted-breaks.yaml.",
    );
    process.exitCode = 1;
  } else console.log('spec:diff --check: no unaccepted breaking change.');
}

if (import.meta.url === `file://${process.argv[1]}`) main(process.argv.slice(2));
