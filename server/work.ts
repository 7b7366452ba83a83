// Every kind of work the runner knows, in one place. Later issues register their state machines' steps here.
import type { AppOptions } from './app.ts';
import type { Runner } from './runner.ts';

export function registerWork(_runner: Runner, _services: AppOptions): void {}
