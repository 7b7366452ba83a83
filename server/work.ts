// Every kind of work the runner knows, in one place. Later issues register their state machines' steps here.
import type { AppOptions } from './app.ts';
import type { Runner } from './runner.ts';
import { registerRemediationWork } from './modules/compute.ts';
import { registerModelUploads } from './modules/models.ts';
import { registerDeployments } from './modules/dedicated.ts';

export function registerWork(runner: Runner, services: AppOptions): void {
  registerRemediationWork(runner, services);
  registerModelUploads(runner, services);
  registerDeployments(runner, services);
}
