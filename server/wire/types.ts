import type { components } from '../../generated/api.d.ts';

/** The spec's schemas, as a response carries them. */
export type Schemas = components['schemas'];
