// The JSON Schemas callers send (tool `parameters`, `response_format` schemas), in whichever draft they are written:
// clients produce several (the Vercel AI SDK converts zod to draft-07, LangChain to 2020-12, older code draft-04).
// The root `$schema` names the draft (http or https, with or without the trailing `#`); without it a schema is read
// as 2020-12. Ajv has a class per draft (draft-04 from its companion package ajv-draft-04); one instance each, made
// on first use, validates against the draft's meta-schema and compiles.
import { Ajv } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import draft06 from 'ajv/dist/refs/json-schema-draft-06.json' with { type: 'json' };
import AjvDraft04 from 'ajv-draft-04';
import addFormats from 'ajv-formats';
import { RE2JS } from 're2js';

export const DRAFTS = ['draft-04', 'draft-06', 'draft-07', '2019-09', '2020-12'] as const;
export type Draft = (typeof DRAFTS)[number];

/** Each draft's meta-schema URI, as `$schema` names it (scheme and trailing `#` aside). */
const URIS: Record<string, Draft> = {
  'json-schema.org/draft-04/schema': 'draft-04',
  'json-schema.org/draft-06/schema': 'draft-06',
  'json-schema.org/draft-07/schema': 'draft-07',
  'json-schema.org/draft/2019-09/schema': '2019-09',
  'json-schema.org/draft/2020-12/schema': '2020-12',
};

/** Why a caller's schema cannot be used; the message names the caller's schema, never the server's. */
export class SchemaProblem extends Error {}

type Validator = Pick<Ajv, 'compile' | 'removeSchema'>;

// A caller's `pattern` runs on the server: with JavaScript's backtracking engine `^(\w+)*x$` against 40 characters
// takes hours. RE2's engine (re2js, pure JavaScript) matches in time linear in the input; a pattern it does not
// support (lookaround, backreferences) makes the schema one this server cannot use (400, as for any invalid schema).
const linearRegExp = Object.assign(
  (pattern: string) => {
    const re = RE2JS.compile(pattern);
    // Ajv keys its compiled patterns by toString.
    return { test: (text: string) => re.matcher(text).find(), toString: () => pattern };
  },
  { code: 'RE2JS' },
);

// Each schema is compiled to check one sample, once: Ajv's optimising passes over the generated code cost more than
// they save then (a third of the compile time, and more for large schemas), so they are off.
const options = { strict: false, allErrors: false, code: { regExp: linearRegExp, optimize: false } } as const;

function make(draft: Draft): Validator {
  let ajv: Ajv;
  switch (draft) {
    case 'draft-04':
      ajv = new (AjvDraft04 as unknown as typeof Ajv)(options);
      break;
    case 'draft-06':
      ajv = new Ajv(options);
      ajv.addMetaSchema(draft06);
      break;
    case 'draft-07':
      ajv = new Ajv(options);
      break;
    case '2019-09':
      ajv = new Ajv2019(options);
      break;
    case '2020-12':
      ajv = new Ajv2020(options);
      break;
  }
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  return ajv;
}

const validators = new Map<Draft, Validator>();

/** The draft a schema is written in, from its root `$schema`; 2020-12 without one. */
export function draftOf(schema: object): Draft {
  const uri = (schema as { $schema?: unknown }).$schema;
  if (uri === undefined) return '2020-12';
  const draft = typeof uri === 'string' ? URIS[uri.replace(/^https?:\/\//, '').replace(/#$/, '')] : undefined;
  if (!draft) {
    throw new SchemaProblem(
      `its $schema ${JSON.stringify(uri)} names no JSON Schema draft this server reads (draft-04, draft-06, draft-07, 2019-09 or 2020-12, e.g. "http://json-schema.org/draft-07/schema#")`,
    );
  }
  return draft;
}

/**
 * A function telling whether a value is valid against `schema`, read in its draft; a SchemaProblem when the draft is
 * unknown or the schema is not a valid schema of its draft.
 */
export function validatorOf(schema: object): (value: unknown) => boolean {
  const draft = draftOf(schema);
  let ajv = validators.get(draft);
  if (!ajv) {
    ajv = make(draft);
    validators.set(draft, ajv);
  }
  // `$schema` has chosen the validator, which reads its own draft; the copy keeps a spelling Ajv does not know
  // (https, no `#`) from being looked up.
  const { $schema: _, ...rest } = schema as Record<string, unknown>;
  try {
    const validate = ajv.compile(rest);
    return (value) => validate(value) as boolean;
  } catch (e) {
    throw new SchemaProblem(`it is not a valid ${draft} JSON Schema: ${(e as Error).message}`);
  } finally {
    // Each request brings its own schema: forgetting it keeps Ajv's cache from growing, and lets the next request
    // use the same `$id`.
    ajv.removeSchema(rest);
  }
}
