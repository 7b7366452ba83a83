// The machine's own tools the local engines run (the recogniser, the synthesiser), found as a shell would.
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** The first `binary` on `PATH`, or undefined. */
export function onPath(binary: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, binary);
    if (dir && existsSync(candidate)) return candidate;
  }
  return undefined;
}
