// The package trial (`TRIALS=package npm run trials`): both tarballs installed into an empty project exactly as a
// user installs them, with nothing supplied locally: on this offline machine better-sqlite3's install cannot download
// its prebuilt binary and compiles from source (minutes), which is why the suite's test/package.test.ts supplies that
// binary instead. Then the outside app's vitest suite runs there. Reports the pack, install and suite times.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installApp, packBoth, runAppSuite } from '../support/package.ts';

export async function packageTrial(
  log: (line: string) => void,
): Promise<{ packMs: number; installMs: number; suiteMs: number; passed: number; failures: string[] }> {
  const work = mkdtempSync(join(tmpdir(), 'platform-package-trial-'));
  try {
    let t = performance.now();
    const packed = await packBoth(work);
    const packMs = performance.now() - t;
    log(`packed in ${Math.round(packMs)} ms; installing (better-sqlite3 compiles from source)`);
    const installMs = await installApp(join(work, 'app'), packed);
    t = performance.now();
    const { passed, failures } = await runAppSuite(join(work, 'app'));
    return { packMs: Math.round(packMs), installMs: Math.round(installMs), suiteMs: Math.round(performance.now() - t), passed, failures };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
