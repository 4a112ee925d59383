/** 500,000 credits = 1 USD. */
export const CREDITS_PER_USD = 500_000;

export function usd(credits: number): string {
  const dollars = credits / CREDITS_PER_USD;
  return `$${dollars.toFixed(dollars !== 0 && dollars < 0.01 ? 6 : 2)}`;
}

export function credits(n: number): string {
  return n.toLocaleString('en-US');
}

/** A token count, with thousands separators. */
export function tokens(n: number | null | undefined): string {
  return (n ?? 0).toLocaleString('en-US');
}

/** Prompt tokens neither read from nor written to the prompt cache (prompt_tokens counts all three). */
export function uncachedInput(t: { prompt_tokens: number; cache_read_tokens?: number; cache_write_tokens?: number }): number {
  return Math.max(0, t.prompt_tokens - (t.cache_read_tokens ?? 0) - (t.cache_write_tokens ?? 0));
}

export function when(unixSeconds: number | null | undefined): string {
  if (!unixSeconds || unixSeconds < 0) return '—';
  return new Date(unixSeconds * 1000).toISOString().replace('T', ' ').slice(0, 19);
}

export const KEY_STATUS: Record<number, string> = { 1: 'enabled', 2: 'disabled', 3: 'expired', 4: 'exhausted' };

/** A date input's value (YYYY-MM-DD, UTC) as Unix seconds at the start (or end) of that day. */
export function dayToUnix(day: string, end = false): number | undefined {
  if (!day) return undefined;
  const t = Date.parse(`${day}T00:00:00Z`);
  if (Number.isNaN(t)) return undefined;
  return Math.floor(t / 1000) + (end ? 86_399 : 0);
}

/** A ledger row's billed quantity in its own unit: '12.5 s of audio', '1,234 characters', '2 search units'; '—' for tokens. */
export function billedUnits(units: number, unit: string): string {
  if (!unit) return '—';
  if (unit === 'milliseconds') return `${(units / 1000).toLocaleString('en-US', { maximumFractionDigits: 3 })} s of audio`;
  const name = unit.replace(/_/g, ' ');
  return `${units.toLocaleString('en-US')} ${units === 1 ? name.replace(/s$/, '') : name}`;
}
