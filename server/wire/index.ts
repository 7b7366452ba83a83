// The one place that turns rows into their wire shapes (seed section 2): one file per spec tag, gathered here.
// Handlers return `wire.<shape>(row)`; nothing else builds response objects from rows.
import { identityWire } from './identity.ts';
import { computeWire } from './compute.ts';
import { volumesWire } from './volumes.ts';
import { secretsWire } from './secrets.ts';
import { hardwareWire } from './hardware.ts';
import { modelsWire } from './models.ts';
import { endpointsWire } from './endpoints.ts';
import { dedicatedWire } from './dedicated.ts';
import { inferenceWire } from './inference.ts';

export const wire = {
  ...identityWire,
  ...computeWire,
  ...volumesWire,
  ...secretsWire,
  ...hardwareWire,
  ...modelsWire,
  ...endpointsWire,
  ...dedicatedWire,
  ...inferenceWire,
};
