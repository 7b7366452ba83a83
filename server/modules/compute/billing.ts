// A cluster's billing, computed when read from what is recorded (the spec's ClusterBilling says the rule): reserved
// GPU-hours are the reservation's GPUs over the cluster's life; on-demand GPU-hours are, at each instant, the GPUs of
// its existing VMs beyond the reservation. One sweep over the instants anything changed.
import { price } from './catalogue.ts';

export interface Reservation {
  at: number;
  gpus: number;
}

export interface BillingInput {
  gpuType: string;
  billingType: string;
  createdAt: number;
  /** Teardown, else now. */
  end: number;
  reservations: Reservation[];
  /** Each VM's life and its instance's GPUs. */
  vms: { from: number; to: number | null; gpus: number }[];
}

const HOUR_MS = 3_600_000;
const round = (n: number, places: number) => Math.round(n * 10 ** places) / 10 ** places;

export function bill(input: BillingInput) {
  const reservedType = input.billingType !== 'ON_DEMAND';
  const clip = (t: number) => Math.min(Math.max(t, input.createdAt), input.end);
  const instants = new Set<number>([input.createdAt, input.end]);
  for (const r of input.reservations) instants.add(clip(r.at));
  for (const v of input.vms) {
    instants.add(clip(v.from));
    if (v.to !== null) instants.add(clip(v.to));
  }
  const times = [...instants].sort((a, b) => a - b);
  let reservedMs = 0;
  let onDemandMs = 0;
  for (let i = 0; i + 1 < times.length; i++) {
    const [t, next] = [times[i]!, times[i + 1]!];
    const reserved = reservedType ? ([...input.reservations].reverse().find((r) => r.at <= t)?.gpus ?? 0) : 0;
    const live = input.vms.filter((v) => v.from <= t && (v.to === null || v.to > t)).reduce((n, v) => n + v.gpus, 0);
    reservedMs += reserved * (next - t);
    onDemandMs += Math.max(0, live - reserved) * (next - t);
  }
  const reservedPrice = reservedType ? price(input.gpuType, input.billingType) : 0;
  const onDemandPrice = price(input.gpuType, 'ON_DEMAND');
  const reservedHours = reservedMs / HOUR_MS;
  const onDemandHours = onDemandMs / HOUR_MS;
  return {
    currency: 'USD' as const,
    reserved_gpu_hours: round(reservedHours, 6),
    reserved_price_per_gpu_hour: reservedPrice,
    on_demand_gpu_hours: round(onDemandHours, 6),
    on_demand_price_per_gpu_hour: onDemandPrice,
    amount_usd: round(reservedHours * reservedPrice + onDemandHours * onDemandPrice, 2),
  };
}
