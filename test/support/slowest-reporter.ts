// A reporter beside vitest's own: at the end of a run, the ten slowest test files (their tests and hooks, as vitest
// measures each file), so a suite that grows slower says where.
import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

export default class SlowestFiles implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const rows = modules
      .map((m) => ({ file: relative(process.cwd(), m.moduleId), ms: m.diagnostic().duration + m.diagnostic().collectDuration }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 10);
    if (!rows.length) return;
    console.log('\nThe ten slowest test files:');
    for (const r of rows) console.log(`  ${(r.ms / 1000).toFixed(1).padStart(6)} s  ${r.file}`);
  }
}
