// Module `adapters`: rows -> wire shapes.
import type { Model } from '../../../generated/prisma/sqlite/client/client.ts';
import type { Wire } from '../types.ts';

export function adapterBindingWire(endpointName: string, adapter: Model): Wire<'AdapterBinding'> {
  return { model_id: `${endpointName}:${adapter.name}`, adapter_name: adapter.name, endpoint_name: endpointName };
}
