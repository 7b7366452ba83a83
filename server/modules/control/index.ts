// Module `control` (spec/tags/control.yaml): the test double's control plane: reset (reset.ts), the request journal
// (journal.ts), fault rules (faults.ts), scripted answers (scripts.ts, scripted.ts), time (time.ts: the clock, and jobs
// moved through their machines), rate limits (limits.ts) and the console's reads (console.ts), kept per process in a
// ControlPlane (plane.ts), behind the control key (key.ts). The HTTP pipeline records and applies them (server/http/app.ts).
import type { ModuleDescriptor } from '../types.ts';
import { getControlFineTuneMetrics, getControlOverview, getControlVideoContent } from './console.ts';
import { applyFixtures } from './fixtures-apply.ts';
import { clearFaults, clearJournal, createFault, deleteFault, listFaults, listJournal, resetPlatform } from './handlers.ts';
import { getRateLimit, setRateLimit } from './limits.ts';
import { clearScripts, createScript, deleteScript, getScript, listScripts } from './script-handlers.ts';
import { createSnapshot, deleteSnapshot, listSnapshots, restoreSnapshot } from './snapshots.ts';
import { advanceTime, getTime, transitionJob } from './time.ts';

export type { Fault } from './faults.ts';
export { failedWith } from './faults.ts';
export { applyFixturesFile } from './fixtures-apply.ts';
export { captureBody, keptBody } from './journal.ts';
export { controlKey } from './key.ts';
export { ControlPlane } from './plane.ts';
export { unplaced } from './reset.ts';
export { embedScripted, scriptedJudge, scriptedTextEngine, scriptedTranscript, textRequest } from './scripted.ts';
export { restoreClock } from './time.ts';

export const control: ModuleDescriptor<'control'> = {
  name: 'control',
  handlers: {
    resetPlatform,
    listJournal,
    clearJournal,
    listFaults,
    createFault,
    deleteFault,
    clearFaults,
    getControlOverview,
    getControlFineTuneMetrics,
    getControlVideoContent,
    listScripts,
    createScript,
    getScript,
    deleteScript,
    clearScripts,
    getTime,
    advanceTime,
    transitionJob,
    getRateLimit,
    setRateLimit,
    listSnapshots,
    createSnapshot,
    deleteSnapshot,
    restoreSnapshot,
    applyFixtures,
  },
  // Nothing here belongs to a project: no cross-project fixtures.
};
