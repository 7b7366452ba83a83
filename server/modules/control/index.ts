// Module `control` (spec/tags/control.yaml): the test double's control plane: reset (reset.ts), the request journal
// (journal.ts), fault rules (faults.ts) and scripted answers (scripts.ts, scripted.ts), kept per process in a
// ControlPlane (plane.ts), behind the control key (key.ts). The HTTP pipeline records and applies them (server/http/app.ts).
import type { ModuleDescriptor } from '../types.ts';
import { getControlFineTuneMetrics, getControlOverview, getControlVideoContent } from './console.ts';
import { clearFaults, clearJournal, createFault, deleteFault, listFaults, listJournal, resetPlatform } from './handlers.ts';
import { clearScripts, createScript, deleteScript, getScript, listScripts } from './script-handlers.ts';

export type { Fault } from './faults.ts';
export { captureBody, keptBody } from './journal.ts';
export { controlKey } from './key.ts';
export { ControlPlane } from './plane.ts';
export { unplaced } from './reset.ts';
export { embedScripted, scriptedJudge, scriptedTextEngine, scriptedTranscript, textRequest } from './scripted.ts';

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
  },
  // Nothing here belongs to a project: no cross-project fixtures.
};
