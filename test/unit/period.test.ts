import { effectivePeriod, nextPeriodStart, periodStart } from '../../src/domain/limits/period';
import { validateGatewayConfig } from '../../src/gateway-config/schema';

const at = (iso: string) => Date.parse(iso);
const iso = (s: number) => new Date(s * 1000).toISOString();

describe('periodic budgets: calendar periods in UTC', () => {
  it('days, ISO weeks (Monday) and months start and end where the calendar says', () => {
    expect(iso(periodStart('day', at('2026-11-26T23:59:59.999Z')))).toBe('2026-11-26T00:00:00.000Z');
    expect(iso(nextPeriodStart('day', at('2026-11-26T23:59:59.999Z')))).toBe('2026-11-27T00:00:00.000Z');
    // Thursday 26 November 2026: the week began on Monday the 23rd.
    expect(iso(periodStart('week', at('2026-11-26T10:00:00Z')))).toBe('2026-11-23T00:00:00.000Z');
    expect(iso(periodStart('week', at('2026-11-29T23:00:00Z')))).toBe('2026-11-23T00:00:00.000Z'); // Sunday
    expect(iso(periodStart('week', at('2026-11-30T00:00:00Z')))).toBe('2026-11-30T00:00:00.000Z'); // Monday
    expect(iso(nextPeriodStart('week', at('2026-11-26T10:00:00Z')))).toBe('2026-11-30T00:00:00.000Z');
    expect(iso(periodStart('month', at('2026-12-31T23:59:59Z')))).toBe('2026-12-01T00:00:00.000Z');
    expect(iso(nextPeriodStart('month', at('2026-12-31T23:59:59Z')))).toBe('2027-01-01T00:00:00.000Z');
    expect(iso(nextPeriodStart('month', at('2028-02-10T00:00:00Z')))).toBe('2028-03-01T00:00:00.000Z');
  });

  it('a key\'s own budget wins over its group\'s default; a group default needs its period', () => {
    const r = validateGatewayConfig(
      {
        channels: [{ name: 'c', type: 'openai', base_url: 'https://x.example/v1', key: 'k', models: ['m'], groups: ['default', 'free'] }],
        models: { m: { input_per_1m: 1, output_per_1m: 1 } },
        groups: { free: { period_quota: 500_000, quota_period: 'month' } },
      },
      'test',
    );
    if (!r.ok) throw new Error(r.problems.join('\n'));
    expect(effectivePeriod({ periodQuota: 0, quotaPeriod: null }, 'free', r.config)).toEqual({ quota: 500_000, unit: 'month' });
    expect(effectivePeriod({ periodQuota: 1000, quotaPeriod: 'day' }, 'free', r.config)).toEqual({ quota: 1000, unit: 'day' });
    expect(effectivePeriod({ periodQuota: 0, quotaPeriod: null }, '', r.config)).toBeUndefined();
    const bad = validateGatewayConfig(
      { channels: [{ name: 'c', type: 'openai', base_url: 'https://x.example/v1', key: 'k', models: ['m'] }], models: { m: { input_per_1m: 1, output_per_1m: 1 } }, groups: { free: { period_quota: 5 } } },
      'test',
    );
    expect(bad.ok ? [] : bad.problems).toEqual(['groups.free.quota_period: is required when period_quota is set']);
  });
});
