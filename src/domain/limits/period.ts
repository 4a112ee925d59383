import { groupSettings } from '../../gateway-config/lookup';
import type { GatewayConfig } from '../../gateway-config/schema';
import type { PeriodBudget } from '../billing/holds';

export const QUOTA_PERIODS = ['day', 'week', 'month'] as const;
export type QuotaPeriod = (typeof QUOTA_PERIODS)[number];

/** What a key sets itself: `period_quota` credits per `quota_period` (0: none of its own). */
export interface OwnPeriod {
  periodQuota: number;
  quotaPeriod: QuotaPeriod | null;
}

/** The start of the calendar period (UTC) that holds `nowMs`, in Unix seconds; weeks start on Monday (ISO 8601). */
export function periodStart(unit: QuotaPeriod, nowMs: number): number {
  const d = new Date(nowMs);
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  if (unit === 'day') return day / 1000;
  if (unit === 'week') return (day - ((d.getUTCDay() + 6) % 7) * 86_400_000) / 1000;
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / 1000;
}

/** The start of the period after the one that holds `nowMs` (when a used-up budget is back), Unix seconds. */
export function nextPeriodStart(unit: QuotaPeriod, nowMs: number): number {
  const start = periodStart(unit, nowMs) * 1000;
  const d = new Date(start);
  if (unit === 'day') return (start + 86_400_000) / 1000;
  if (unit === 'week') return (start + 7 * 86_400_000) / 1000;
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) / 1000;
}

/** The periodic budget in force for a key: its own when set, else its group's default; undefined when none. */
export function effectivePeriod(own: OwnPeriod, group: string, config: GatewayConfig): { quota: number; unit: QuotaPeriod } | undefined {
  if (own.periodQuota > 0 && own.quotaPeriod) return { quota: own.periodQuota, unit: own.quotaPeriod };
  const defaults = groupSettings(config, group);
  if (defaults && defaults.period_quota > 0 && defaults.quota_period) return { quota: defaults.period_quota, unit: defaults.quota_period };
  return undefined;
}

/** What a reserve counts a call in: the budget in force and the start of the current period. */
export function periodBudget(own: OwnPeriod, group: string, config: GatewayConfig, nowMs: number): PeriodBudget | undefined {
  const p = effectivePeriod(own, group, config);
  return p ? { quota: p.quota, start: periodStart(p.unit, nowMs) } : undefined;
}
