/**
 * Exact decimal numbers for money: value = digits / 10^scale, with every operation in BigInt.
 * Never goes through binary floating point: a JS number is read from its shortest round-trip string
 * (String(0.15) === '0.15'), which is exactly the decimal the author wrote for up to 15 significant digits.
 *
 * Values are canonical (no trailing zeros in `digits` while scale > 0) and frozen, so two equal decimals are
 * structurally equal (`toEqual`) whatever form they were written in ('0.60', 0.6, '6e-1').
 */
export interface Decimal {
  readonly digits: bigint;
  /** Number of decimal places, >= 0. */
  readonly scale: number;
}

/** Anything `decimal()` accepts. */
export type DecimalLike = Decimal | number | string | bigint;

/**
 * Largest exponent magnitude accepted in text ('1e-400' is fine, '1e-100000' is refused): keeps a hostile
 * config or request from building a BigInt with millions of digits. Every finite JS number fits.
 */
export const MAX_DECIMAL_EXPONENT = 400;

const DECIMAL_TEXT = /^([+-]?)(\d+)?(?:\.(\d+)?)?(?:[eE]([+-]?\d+))?$/;

function make(digits: bigint, scale: number): Decimal {
  // Canonical form: strip trailing zeros of the fraction.
  while (scale > 0 && digits % 10n === 0n) {
    digits /= 10n;
    scale -= 1;
  }
  if (digits === 0n) scale = 0;
  return Object.freeze({ digits, scale });
}

export const ZERO: Decimal = make(0n, 0);
export const ONE: Decimal = make(1n, 0);

export function isDecimal(value: unknown): value is Decimal {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Decimal).digits === 'bigint' &&
    Number.isSafeInteger((value as Decimal).scale) &&
    (value as Decimal).scale >= 0
  );
}

/**
 * Parses '0.15', '-3', '.5', '5.', '1e-7', '1.5E+21'. Throws RangeError on anything else (the message never
 * contains the input: the input may be a secret typed in the wrong field).
 */
export function parseDecimal(text: string): Decimal {
  const m = DECIMAL_TEXT.exec(text.trim());
  if (!m || (m[2] === undefined && m[3] === undefined)) throw new RangeError('not a decimal number');
  const [, sign, intPart = '', fracPart = '', expPart] = m;
  let exponent = 0;
  if (expPart !== undefined) {
    // Compare as text first: Number('1' + '0'.repeat(400)) is Infinity, not an error.
    const magnitude = expPart.replace(/^[+-]/, '').replace(/^0+(?=\d)/, '');
    if (magnitude.length > 4 || Number(magnitude) > MAX_DECIMAL_EXPONENT) {
      throw new RangeError(`exponent beyond ±${MAX_DECIMAL_EXPONENT}`);
    }
    exponent = Number(expPart);
  }
  let digits = BigInt((intPart + fracPart) || '0');
  let scale = fracPart.length - exponent;
  if (scale < 0) {
    digits *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return make(sign === '-' ? -digits : digits, scale);
}

/** A Decimal from a Decimal, a finite number (via its shortest round-trip string), a decimal string or a bigint. */
export function decimal(value: DecimalLike): Decimal {
  if (typeof value === 'bigint') return make(value, 0);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError('not a finite number');
    return parseDecimal(String(value));
  }
  if (typeof value === 'string') return parseDecimal(value);
  if (isDecimal(value)) return make(value.digits, value.scale);
  throw new TypeError('not a decimal');
}

function align(a: Decimal, b: Decimal): [bigint, bigint, number] {
  if (a.scale === b.scale) return [a.digits, b.digits, a.scale];
  if (a.scale > b.scale) return [a.digits, b.digits * 10n ** BigInt(a.scale - b.scale), a.scale];
  return [a.digits * 10n ** BigInt(b.scale - a.scale), b.digits, b.scale];
}

export function decimalAdd(a: Decimal, b: Decimal): Decimal {
  const [x, y, scale] = align(a, b);
  return make(x + y, scale);
}

export function decimalMul(a: Decimal, b: Decimal): Decimal {
  return make(a.digits * b.digits, a.scale + b.scale);
}

/** -1, 0 or 1. */
export function decimalCompare(a: Decimal, b: Decimal): -1 | 0 | 1 {
  const [x, y] = align(a, b);
  return x < y ? -1 : x > y ? 1 : 0;
}

export function isNegative(d: Decimal): boolean {
  return d.digits < 0n;
}

/** The smallest integer >= d, exactly. */
export function decimalCeil(d: Decimal): bigint {
  if (d.scale === 0) return d.digits;
  const divisor = 10n ** BigInt(d.scale);
  const q = d.digits / divisor; // truncates toward zero
  return d.digits > 0n && d.digits % divisor !== 0n ? q + 1n : q;
}

/** The smallest integer >= d / divisor (divisor > 0), exactly: prices per minute billed by the millisecond. */
export function decimalCeilDiv(d: Decimal, divisor: bigint): bigint {
  if (divisor <= 0n) throw new RangeError('divisor must be positive');
  const den = 10n ** BigInt(d.scale) * divisor;
  const q = d.digits / den;
  return d.digits > 0n && d.digits % den !== 0n ? q + 1n : q;
}

/** Plain decimal notation, never an exponent: '0.15', '-3', '0.0000001'. */
export function decimalToString(d: Decimal): string {
  const negative = d.digits < 0n;
  let s = (negative ? -d.digits : d.digits).toString();
  if (d.scale > 0) {
    s = s.padStart(d.scale + 1, '0');
    s = `${s.slice(0, s.length - d.scale)}.${s.slice(s.length - d.scale)}`;
  }
  return negative ? `-${s}` : s;
}
