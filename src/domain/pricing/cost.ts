import { CostOutOfRangeError, PriceKindError } from '../errors';
import {
  type Decimal,
  type DecimalLike,
  ONE,
  decimal,
  decimalAdd,
  decimalCeil,
  decimalMul,
  decimalToString,
  isNegative,
} from './decimal';

/**
 * What a model costs, in USD. Exactly one kind per model: tokens (input_per_1m, with output_per_1m
 * optional), per_unit (one image or one video), or per_second (of requested video duration).
 */
export interface Price {
  input_per_1m?: Decimal;
  output_per_1m?: Decimal;
  per_unit?: Decimal;
  per_second?: Decimal;
}

export type PriceKind = 'tokens' | 'unit' | 'second';

/** 500,000 credits = 1.00 USD (the spec's quota unit). */
export const CREDITS_PER_USD = 500_000n;

/** Credits per USD / tokens per price unit = 500000 / 1000000, exactly 0.5. */
const PER_1M_TOKENS_TO_CREDITS: Decimal = decimal('0.5');
const USD_TO_CREDITS: Decimal = decimal(CREDITS_PER_USD);

/** The kind of a price; throws PriceKindError when it has none or mixes kinds. */
export function priceKind(price: Price): PriceKind {
  const tokens = price.input_per_1m !== undefined || price.output_per_1m !== undefined;
  const unit = price.per_unit !== undefined;
  const second = price.per_second !== undefined;
  const count = Number(tokens) + Number(unit) + Number(second);
  if (count !== 1) {
    throw new PriceKindError(count === 0 ? 'This model has no price' : 'This model has more than one kind of price');
  }
  return tokens ? 'tokens' : unit ? 'unit' : 'second';
}

const KIND_WORDS: Record<PriceKind, string> = { tokens: 'per token', unit: 'per unit', second: 'per second' };

function expectKind(price: Price, expected: PriceKind): void {
  const actual = priceKind(price);
  if (actual !== expected) {
    throw new PriceKindError(`This model is priced ${KIND_WORDS[actual]}, not ${KIND_WORDS[expected]}`);
  }
}

function count(value: number | bigint, what: string): Decimal {
  if (typeof value === 'bigint') {
    if (value < 0n) throw new RangeError(`${what} must be a non-negative integer`);
    return decimal(value);
  }
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${what} must be a non-negative safe integer`);
  return decimal(BigInt(value));
}

function nonNegative(value: DecimalLike, what: string): Decimal {
  const d = decimal(value);
  if (isNegative(d)) throw new RangeError(`${what} must not be negative`);
  return d;
}

function credits(usd: Decimal): number {
  const c = decimalCeil(usd);
  if (c > BigInt(Number.MAX_SAFE_INTEGER)) throw new CostOutOfRangeError();
  return Number(c);
}

export interface TokenUsage {
  promptTokens: number | bigint;
  completionTokens: number | bigint;
}

/**
 * ceil(multiplier × (prompt_tokens × input_per_1m + completion_tokens × output_per_1m) × 500000 / 1000000),
 * in exact decimal arithmetic. A missing output_per_1m counts as 0.
 */
export function costOfTokens(price: Price, usage: TokenUsage, multiplier: DecimalLike = ONE): number {
  expectKind(price, 'tokens');
  const m = nonNegative(multiplier, 'multiplier');
  const input = decimalMul(count(usage.promptTokens, 'promptTokens'), price.input_per_1m ?? decimal(0));
  const output = decimalMul(count(usage.completionTokens, 'completionTokens'), price.output_per_1m ?? decimal(0));
  return credits(decimalMul(decimalMul(m, decimalAdd(input, output)), PER_1M_TOKENS_TO_CREDITS));
}

/** ceil(multiplier × units × per_unit × 500000): images returned, or videos delivered. */
export function costOfUnits(price: Price, units: number | bigint, multiplier: DecimalLike = ONE): number {
  expectKind(price, 'unit');
  const m = nonNegative(multiplier, 'multiplier');
  const usd = decimalMul(count(units, 'units'), price.per_unit as Decimal);
  return credits(decimalMul(decimalMul(m, usd), USD_TO_CREDITS));
}

/** ceil(multiplier × seconds × per_second × 500000), seconds of requested duration (fractions allowed). */
export function costOfSeconds(price: Price, seconds: DecimalLike, multiplier: DecimalLike = ONE): number {
  expectKind(price, 'second');
  const m = nonNegative(multiplier, 'multiplier');
  const usd = decimalMul(nonNegative(seconds, 'seconds'), price.per_second as Decimal);
  return credits(decimalMul(decimalMul(m, usd), USD_TO_CREDITS));
}

/** What was used, tagged by the kind of price that bills it. */
export type Usage =
  | ({ kind: 'tokens' } & TokenUsage)
  | { kind: 'unit'; units: number | bigint }
  | { kind: 'second'; seconds: DecimalLike };

/** The cost of a finished call; throws PriceKindError when the usage is not the model's kind of price. */
export function costOf(price: Price, usage: Usage, multiplier: DecimalLike = ONE): number {
  switch (usage.kind) {
    case 'tokens':
      return costOfTokens(price, usage, multiplier);
    case 'unit':
      return costOfUnits(price, usage.units, multiplier);
    case 'second':
      return costOfSeconds(price, usage.seconds, multiplier);
  }
}

/** What a request may use at most, for a quota hold before the upstream call. */
export interface UsageEstimate {
  /** Counted or estimated prompt tokens (token-priced models). */
  promptTokens?: number | bigint;
  /** max_tokens, or the gateway's cap when the request gives none (token-priced models). */
  maxCompletionTokens?: number | bigint;
  /** Images or videos asked for (`n`); default 1. */
  units?: number | bigint;
  /** Requested duration (per-second models); required for them. */
  seconds?: DecimalLike;
}

/**
 * The cost of the most a request can use, by the model's kind of price: the amount to hold before calling
 * upstream. The final charge (costOf with the real usage) is never above it for the same inputs.
 */
export function estimateCost(price: Price, want: UsageEstimate, multiplier: DecimalLike = ONE): number {
  switch (priceKind(price)) {
    case 'tokens':
      return costOfTokens(
        price,
        { promptTokens: want.promptTokens ?? 0, completionTokens: want.maxCompletionTokens ?? 0 },
        multiplier,
      );
    case 'unit':
      return costOfUnits(price, want.units ?? 1, multiplier);
    case 'second':
      if (want.seconds === undefined) throw new PriceKindError('This model is priced per second: a duration is required');
      return costOfSeconds(price, want.seconds, multiplier);
  }
}

/** Credits as exact USD text: 225 -> '0.00045'. */
export function creditsToUsd(credits: number | bigint): string {
  const c = typeof credits === 'bigint' ? credits : BigInt(credits);
  return decimalToString(decimal({ digits: c * 2n, scale: 6 }));
}
