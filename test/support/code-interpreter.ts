// The code interpreter's tests share a platform set up alike: sandboxes with short limits, called through the
// official client.
import Together from 'together-ai';
import { startTestPlatform, type TestPlatform } from './platform.ts';

// A cell's limit is far above what the tests' cells need on a loaded machine (importing urllib in a fresh interpreter
// took over 2 s beside two busy cores): only the test of the limit itself sets a short one (TIMEOUT_LIMITS).
export const LIMITS = { timeoutMs: 30_000, memoryBytes: 256 * 2 ** 20, maxSandboxes: 4, sessionMs: 3_600_000 };
export const TIMEOUT_LIMITS = { ...LIMITS, timeoutMs: 2000 };

type Executed = NonNullable<Awaited<ReturnType<Together['codeInterpreter']['execute']>>['data']>;

export interface CodeInterpreterPlatform {
  t: TestPlatform;
  together: Together;
  /** Runs a cell (in `session_id`, with `files`); its errors thrown. */
  run(code: string, session_id?: string, files?: Together.CodeInterpreterExecuteParams['files']): Promise<Executed>;
}

export async function startCodeInterpreterPlatform(limits = LIMITS): Promise<CodeInterpreterPlatform> {
  const t = await startTestPlatform({ config: { codeInterpreter: limits } });
  const p: CodeInterpreterPlatform = {
    t,
    together: new Together({ apiKey: t.caller.key, baseURL: `${t.url}/v1`, maxRetries: 0 }),
    async run(code, session_id, files) {
      const res = await p.together.codeInterpreter.execute({ code, language: 'python', session_id, files });
      if (res.errors) throw new Error(JSON.stringify(res.errors));
      return res.data!;
    },
  };
  return p;
}

/** The text a cell printed. */
export const stdout = (outputs: { type: string; data: unknown }[]) =>
  outputs
    .filter((o) => o.type === 'stdout')
    .map((o) => o.data)
    .join('');
