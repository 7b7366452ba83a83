// Module `control` (spec/tags/control.yaml): the test double's control plane: reset (reset.ts), the request journal
// (journal.ts) and fault rules (faults.ts), kept per process in a ControlPlane (plane.ts), behind the control key
// (key.ts). The HTTP pipeline records and applies them (server/http/app.ts).
import type { ModuleDescriptor } from '../types.ts';
import { applyFixtures } from './fixtures-apply.ts';
import { clearFaults, clearJournal, createFault, deleteFault, listFaults, listJournal, resetPlatform } from './handlers.ts';
import { createSnapshot, deleteSnapshot, listSnapshots, restoreSnapshot } from './snapshots.ts';

export type { Fault } from './faults.ts';
export { applyFixturesFile } from './fixtures-apply.ts';
export { captureBody, keptBody } from './journal.ts';
export { controlKey } from './key.ts';
export { ControlPlane } from './plane.ts';
export { unplaced } from './reset.ts';

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
    listSnapshots,
    createSnapshot,
    deleteSnapshot,
    restoreSnapshot,
    applyFixtures,
  },
  // Nothing here belongs to a project: no cross-project fixtures.
};
