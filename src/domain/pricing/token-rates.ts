import { type Decimal, type DecimalLike, decimal, decimalMul, isNegative } from './decimal';

/**
 * Token prices as safe integers, for the costs every chat call computes twice (its hold and its charge). A price
 * block and a multiplier are compiled once into integer rates (credits per token × 10^S, one common S), so a call's
 * cost is ceil(Σ tokens × rate / 10^S) in plain numbers: exact, because every product, the sum and the division's
 * check stay under 2^53. When they would not (a rate or a count too large), `sumCeil` says so with null and the
 * caller computes in BigInt decimals (cost.ts), as it always did. The compiled rates are kept per price object,
 * which a config reload replaces.
 */

const MAX = Number.MAX_SAFE_INTEGER;

/** Integer rates over `den` (10^S), in the order they were asked for; null when they do not fit in safe integers. */
export interface IntegerRates {
  rates: number[];
  den: number;
}

const compiled = new WeakMap<object, Map<string, IntegerRates | null>>();

function multiplierKey(m: DecimalLike): string {
  return typeof m === 'object' ? `${m.digits}e-${m.scale}` : `${typeof m}:${String(m)}`;
}

/**
 * The rates `perToken(m)` gives, as integers over one power of ten, compiled once per (owner, what, multiplier).
 * `perToken` returns each rate as a decimal (credits per token with the multiplier applied). Null when the
 * multiplier is negative (the caller's own path reports it) or the rates do not fit.
 */
export function integerRates(owner: object, what: string, multiplier: DecimalLike, perToken: (m: Decimal) => Decimal[]): IntegerRates | null {
  let byKey = compiled.get(owner);
  if (!byKey) compiled.set(owner, (byKey = new Map()));
  const key = `${what}|${multiplierKey(multiplier)}`;
  const known = byKey.get(key);
  if (known !== undefined) return known;
  let result: IntegerRates | null = null;
  try {
    const m = decimal(multiplier);
    if (!isNegative(m)) result = toIntegers(perToken(m));
  } catch {
    result = null;
  }
  byKey.set(key, result);
  return result;
}

function toIntegers(decimals: Decimal[]): IntegerRates | null {
  const scale = Math.max(0, ...decimals.map((d) => d.scale));
  if (scale > 15) return null;
  const rates: number[] = [];
  for (const d of decimals) {
    if (d.digits < 0n) return null;
    const r = d.digits * 10n ** BigInt(scale - d.scale);
    if (r > BigInt(MAX)) return null;
    rates.push(Number(r));
  }
  return { rates, den: 10 ** scale };
}

/** ceil(Σ counts[i] × rates[i] / den), exactly; null when a product or the sum would leave the safe integers. */
export function sumCeil(r: IntegerRates, counts: readonly number[]): number | null {
  let sum = 0;
  for (let i = 0; i < counts.length; i++) {
    const c = counts[i];
    const rate = r.rates[i];
    if (c === 0) continue;
    // A count the decimals would refuse goes to them, to be refused there.
    if (!Number.isSafeInteger(c) || c < 0) return null;
    if (rate === 0) continue;
    if (c > MAX / rate) return null;
    const p = c * rate;
    if (p > MAX - sum) return null;
    sum += p;
  }
  let q = Math.floor(sum / r.den);
  // The float division may be one off either way; q × den stays exact below 2^53.
  while (q * r.den > sum) q--;
  while ((q + 1) * r.den <= sum) q++;
  return sum - q * r.den > 0 ? q + 1 : q;
}

/** rate × multiplier × factor as a decimal. */
export function scaled(rate: Decimal, m: Decimal, factor: Decimal): Decimal {
  return decimalMul(decimalMul(m, rate), factor);
}
