// The one place that turns rows into their wire shapes (seed section 2): one file per spec tag, gathered here.
// Handlers return `wire.<shape>(row)`; nothing else builds response objects from rows.
import { identityWire } from './identity.ts';

export const wire = {
  ...identityWire,
};
