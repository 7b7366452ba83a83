// Module `control` (spec/tags/control.yaml): the test double's control plane, a guest of the platform that nothing
// else imports: reset (reset.ts), the request journal (journal.ts), fault rules (faults.ts), scripted answers
// (scripts.ts, scripted.ts), time (time.ts: the clock, and jobs moved through their machines), rate limits
// (limits.ts), snapshots, fixtures and the console's reads (console.ts), behind the control key (key.ts). The
// platform plugs one ControlPlane (plane.ts) into the seams the lower layers own (platform.ts): the pipeline's guest
// (http/guests.ts), the engines' answer interceptors (engines/intercept.ts); its state is every process's (shared.ts).
import type { ModuleDescriptor } from '../types.ts';
import { getControlExperiments, getControlFineTuneMetrics, getControlOverview, getControlVideoContent } from './console.ts';
import { applyFixtures } from './fixtures-apply.ts';
import { clearFaults, clearJournal, createFault, deleteFault, listFaults, listJournal, resetPlatform } from './handlers.ts';
import { getRateLimit, setRateLimit } from './limits.ts';
import type { ControlPlane } from './plane.ts';
import { clearScripts, createScript, deleteScript, getScript, listScripts } from './script-handlers.ts';
import { createSnapshot, deleteSnapshot, listSnapshots, restoreSnapshot } from './snapshots.ts';
import { advanceTime, getTime, transitionJob } from './time.ts';

export { applyFixturesFile } from './fixtures-apply.ts';
export { controlKey } from './key.ts';
export { ControlPlane } from './plane.ts';

/** The Control tag's operations, each handed the control plane of the platform it serves. */
export function controlModule(plane: ControlPlane): ModuleDescriptor<'control'> {
  return {
    name: 'control',
    // Each property's arrow takes its name (the operationId) for the architecture test and the logs.
    handlers: {
      resetPlatform: (ctx) => resetPlatform(ctx, plane),
      listJournal: (ctx) => listJournal(ctx, plane),
      clearJournal: (ctx) => clearJournal(ctx, plane),
      listFaults: (ctx) => listFaults(ctx, plane),
      createFault: (ctx) => createFault(ctx, plane),
      deleteFault: (ctx) => deleteFault(ctx, plane),
      clearFaults: (ctx) => clearFaults(ctx, plane),
      getControlOverview,
      getControlExperiments,
      getControlFineTuneMetrics,
      getControlVideoContent,
      listScripts: (ctx) => listScripts(ctx, plane),
      createScript: (ctx) => createScript(ctx, plane),
      getScript: (ctx) => getScript(ctx, plane),
      deleteScript: (ctx) => deleteScript(ctx, plane),
      clearScripts: (ctx) => clearScripts(ctx, plane),
      getTime: (ctx) => getTime(ctx, plane),
      advanceTime: (ctx) => advanceTime(ctx, plane),
      transitionJob: (ctx) => transitionJob(ctx, plane),
      getRateLimit,
      setRateLimit: (ctx) => setRateLimit(ctx, plane),
      listSnapshots,
      createSnapshot,
      deleteSnapshot,
      restoreSnapshot: (ctx) => restoreSnapshot(ctx, plane),
      applyFixtures: (ctx) => applyFixtures(ctx, plane),
    },
    // Nothing here belongs to a project: no cross-project fixtures.
  };
}
