// A JSON Schema carried in the prompt rather than in `response_format`: how structured-output libraries ask for an
// object when the API call itself does not carry the schema (Instructor's JSON and MD_JSON modes: a system message
// "... return fully valid JSON ... json schema: {...}"; LangChain's format instructions, a schema in a fenced
// block; the Vercel AI SDK's "JSON schema: {...} You MUST answer with a JSON object" for providers without
// structured outputs). The local engine answers such a request with an object valid against that schema (chat.ts).
//
// The rule (the spec's Inference tag): the schema is the last top-level JSON object in the messages' text that is a
// JSON Schema of an object (`type: "object"` or `properties`, or a `$schema`); it is used when the request asks for
// a JSON object (`response_format` `json_object` without a schema of its own) or when the message holding it
// mentions JSON. The answer is plain JSON, or a ```json fenced block when the prompt asks for a code block (and
// `response_format` does not ask for bare JSON).

/** How much of the messages' text is searched: a schema sits in instructions, not deep in a long document. */
const SEARCHED_CHARS = 200_000;

/** The top-level `{...}` spans of a text (strings inside them read as JSON strings), in one pass. */
function objectSpans(text: string): [number, number][] {
  const spans: [number, number][] = [];
  let depth = 0;
  let start = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"' && depth > 0) inString = true;
    else if (c === '{') {
      if (depth++ === 0) start = i;
    } else if (c === '}' && depth > 0 && --depth === 0) spans.push([start, i + 1]);
  }
  return spans;
}

const isObjectSchema = (v: unknown): v is Record<string, unknown> => {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const s = v as Record<string, unknown>;
  return s.type === 'object' || (typeof s.properties === 'object' && s.properties !== null) || typeof s.$schema === 'string';
};

export interface PromptSchema {
  schema: object;
  /** The prompt asks for the object in a fenced code block. */
  fenced: boolean;
}

/**
 * The JSON Schema the messages carry, and how the answer is to be written; null when they carry none, or when
 * nothing asks for JSON (`jsonAsked`: the request's `response_format` asks for a JSON object).
 */
export function schemaInPrompt(texts: string[], jsonAsked: boolean): PromptSchema | null {
  let found: { schema: object; text: string } | null = null;
  let budget = SEARCHED_CHARS;
  for (const whole of texts) {
    if (budget <= 0) break;
    const text = whole.slice(0, budget);
    budget -= text.length;
    for (const [from, to] of objectSpans(text)) {
      let value: unknown;
      try {
        value = JSON.parse(text.slice(from, to));
      } catch {
        continue;
      }
      if (isObjectSchema(value)) found = { schema: value, text };
    }
  }
  if (!found || !(jsonAsked || /json/i.test(found.text))) return null;
  const asksFence = texts.some((t) => /code ?block|```json block/i.test(t.slice(0, SEARCHED_CHARS)));
  return { schema: found.schema, fenced: asksFence && !jsonAsked };
}
