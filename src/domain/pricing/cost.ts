import { CostOutOfRangeError, PriceKindError } from '../errors';
import {
  type Decimal,
  type DecimalLike,
  ONE,
  ZERO,
  decimal,
  decimalAdd,
  decimalCeil,
  decimalCeilDiv,
  decimalCompare,
  decimalMul,
  decimalToString,
  isNegative,
} from './decimal';
import { integerRates, scaled, sumCeil } from './token-rates';
import { billableShares, DIMENSIONS, type Dimension, plainUsage, promptTokensOf, type TokenUsage } from './usage';

/**
 * What a model costs, in USD. One kind per model: tokens (input_per_1m, with output_per_1m optional), per_unit (one
 * image or one video), per_second (of requested video duration), or one of the quantity prices (characters of
 * speech input, minutes of audio, rerank search units). A quantity price may sit beside token prices: the call is
 * billed by tokens when the upstream reports them, by the quantity otherwise.
 */
export interface Price extends TokenPrices {
  per_unit?: Decimal;
  per_second?: Decimal;
  /** Speech: USD per 1M characters of input text. */
  input_characters_per_1m?: Decimal;
  /** Transcription and translation: USD per minute of audio, billed to the millisecond. */
  per_minute?: Decimal;
  /** Rerank: USD per search unit (one query with up to 100 documents). */
  per_search_unit?: Decimal;
  /** Token prices for a call whose input (cached included) exceeds 200,000 tokens; each falls back to the base price. */
  above_200k?: TokenPrices;
}

/** What a quantity price counts: characters of text, milliseconds of audio, search units. */
export type QuantityUnit = 'characters' | 'milliseconds' | 'search_units';

/** Each quantity unit's price field, and how many of the unit that price is for. */
export const QUANTITY_PRICES = {
  characters: { field: 'input_characters_per_1m', per: 1_000_000n },
  milliseconds: { field: 'per_minute', per: 60_000n },
  search_units: { field: 'per_search_unit', per: 1n },
} as const satisfies Record<QuantityUnit, { field: keyof Price; per: bigint }>;

/** The quantity unit a price bills by, or undefined when it has no quantity price. */
export function quantityUnitOf(price: Price): QuantityUnit | undefined {
  for (const [unit, q] of Object.entries(QUANTITY_PRICES)) if (price[q.field] !== undefined) return unit as QuantityUnit;
  return undefined;
}

/** Whether a price has token prices (alone, or beside a quantity price). */
export function hasTokenPrices(price: Price): boolean {
  return TOKEN_PRICE_FIELDS.some((f) => price[f] !== undefined);
}

/**
 * USD per 1M tokens, by usage dimension. Only input_per_1m is required of a token-priced model; a missing price
 * falls back (`priceOf`): cache_write_1h -> cache_write -> input; cache_read -> input; reasoning -> output;
 * image and audio input -> input; audio output -> output; output -> 0.
 */
export interface TokenPrices {
  input_per_1m?: Decimal;
  output_per_1m?: Decimal;
  cache_read_per_1m?: Decimal;
  /** 5-minute cache writes. */
  cache_write_per_1m?: Decimal;
  cache_write_1h_per_1m?: Decimal;
  reasoning_per_1m?: Decimal;
  image_input_per_1m?: Decimal;
  audio_input_per_1m?: Decimal;
  audio_output_per_1m?: Decimal;
}

export const TOKEN_PRICE_FIELDS = [
  'input_per_1m',
  'output_per_1m',
  'cache_read_per_1m',
  'cache_write_per_1m',
  'cache_write_1h_per_1m',
  'reasoning_per_1m',
  'image_input_per_1m',
  'audio_input_per_1m',
  'audio_output_per_1m',
] as const satisfies ReadonlyArray<keyof TokenPrices>;

/** Input tokens (cached included) above which a model's `above_200k` prices apply. */
export const LONG_CONTEXT_THRESHOLD = 200_000;

export type PriceKind = 'tokens' | 'unit' | 'second' | QuantityUnit;

/** 500,000 credits = 1.00 USD (the spec's quota unit). */
export const CREDITS_PER_USD = 500_000n;

/** Credits per USD / tokens per price unit = 500000 / 1000000, exactly 0.5. */
const PER_1M_TOKENS_TO_CREDITS: Decimal = decimal('0.5');
const USD_TO_CREDITS: Decimal = decimal(CREDITS_PER_USD);

/**
 * The kind of a price (a quantity price beside token prices counts as the quantity); throws PriceKindError when
 * it has none or mixes kinds that cannot go together.
 */
export function priceKind(price: Price): PriceKind {
  const known = kinds.get(price);
  if (known) return known;
  const kind = kindOf(price);
  kinds.set(price, kind);
  return kind;
}

/** Prices are config objects, replaced (not changed) on a reload: each one's kind is worked out once. */
const kinds = new WeakMap<Price, PriceKind>();

function kindOf(price: Price): PriceKind {
  const tokens = hasTokenPrices(price);
  const quantities = Object.values(QUANTITY_PRICES).filter((q) => price[q.field] !== undefined).length;
  const unit = price.per_unit !== undefined;
  const second = price.per_second !== undefined;
  const count = Number(tokens) + Number(unit) + Number(second) + quantities;
  if (count === 0) throw new PriceKindError('This model has no price');
  if (count > 1 && !(count === 2 && tokens && quantities === 1)) throw new PriceKindError('This model has more than one kind of price');
  return quantityUnitOf(price) ?? (tokens ? 'tokens' : unit ? 'unit' : 'second');
}

const KIND_WORDS: Record<PriceKind, string> = {
  tokens: 'per token',
  unit: 'per unit',
  second: 'per second',
  characters: 'per character',
  milliseconds: 'per minute',
  search_units: 'per search unit',
};

function expectKind(price: Price, expected: PriceKind): void {
  const actual = priceKind(price);
  if (actual === expected || (expected === 'tokens' && hasTokenPrices(price))) return;
  throw new PriceKindError(`This model is priced ${KIND_WORDS[actual]}, not ${KIND_WORDS[expected]}`);
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

/** The two classic counts, for calls whose usage has no dimensions beyond them (embeddings, estimates). */
export interface TokenCounts {
  promptTokens: number;
  completionTokens: number;
}


function decimalMax(a: Decimal, b: Decimal): Decimal {
  return decimalCompare(a, b) >= 0 ? a : b;
}

/** The USD per 1M tokens of one dimension in one price block, by the fallbacks of TokenPrices. */
function priceOf(p: TokenPrices, d: Dimension): Decimal {
  const input = p.input_per_1m ?? ZERO;
  const output = p.output_per_1m ?? ZERO;
  switch (d) {
    case 'input':
      return input;
    case 'output':
      return output;
    case 'cacheRead':
      return p.cache_read_per_1m ?? input;
    case 'cacheWrite5m':
      return p.cache_write_per_1m ?? input;
    case 'cacheWrite1h':
      return p.cache_write_1h_per_1m ?? p.cache_write_per_1m ?? input;
    case 'reasoning':
      return p.reasoning_per_1m ?? output;
    case 'imageInput':
      return p.image_input_per_1m ?? input;
    case 'audioInput':
      return p.audio_input_per_1m ?? input;
    case 'audioOutput':
      return p.audio_output_per_1m ?? output;
  }
}

/** The price block a call is billed from: `above_200k` (over the base prices) when its input exceeds 200,000 tokens. */
export function pricesFor(price: Price, inputTokens: number): TokenPrices {
  if (!price.above_200k || inputTokens <= LONG_CONTEXT_THRESHOLD) return price;
  return { ...price, ...price.above_200k };
}

/**
 * ceil(multiplier × Σ tokens(dimension) × price(dimension) × 500000 / 1000000) over the usage's disjoint shares
 * (reasoning and audio output taken out of output, image and audio input out of input), in exact decimal
 * arithmetic, rounded up once per call. Prices per dimension and their fallbacks: TokenPrices.
 */
export function costOfUsage(price: Price, usage: TokenUsage, multiplier: DecimalLike = ONE): number {
  expectKind(price, 'tokens');
  const shares = billableShares(usage);
  const longContext = price.above_200k !== undefined && promptTokensOf(usage) > LONG_CONTEXT_THRESHOLD;
  // Safe-integer arithmetic when it is exact (token-rates.ts); the decimals below otherwise, and for every error.
  const rates = integerRates(price, longContext ? 'usage-long' : 'usage', multiplier, (m) =>
    DIMENSIONS.map((d) => scaled(priceOf(pricesFor(price, longContext ? Infinity : 0), d), m, PER_1M_TOKENS_TO_CREDITS)),
  );
  const fast = rates && sumCeil(rates, DIMENSIONS.map((d) => shares[d]));
  if (fast !== null) return fast;
  const m = nonNegative(multiplier, 'multiplier');
  const prices = pricesFor(price, promptTokensOf(usage));
  let usd = ZERO;
  for (const d of DIMENSIONS) {
    if (shares[d] !== 0) usd = decimalAdd(usd, decimalMul(count(shares[d], d), priceOf(prices, d)));
  }
  return credits(decimalMul(decimalMul(m, usd), PER_1M_TOKENS_TO_CREDITS));
}

/** costOfUsage of a call that used `promptTokens` uncached input and `completionTokens` plain output. */
export function costOfTokens(price: Price, usage: TokenCounts, multiplier: DecimalLike = ONE): number {
  return costOfUsage(price, plainUsage(usage.promptTokens, usage.completionTokens), multiplier);
}

/** The highest price any of `dims` may be billed at for a call (base or long-context block). */
function highestPrice(price: Price, dims: readonly Dimension[], longContext: boolean): Decimal {
  const blocks = longContext ? [price, pricesFor(price, Infinity)] : [price];
  let max = ZERO;
  for (const b of blocks) for (const d of dims) max = decimalMax(max, priceOf(b, d));
  return max;
}

const INPUT_DIMENSIONS: readonly Dimension[] = ['input', 'cacheRead', 'cacheWrite5m', 'cacheWrite1h', 'imageInput', 'audioInput'];
const OUTPUT_DIMENSIONS: readonly Dimension[] = ['output', 'reasoning', 'audioOutput'];

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

/**
 * ceil(multiplier × quantity × price × 500000 / per): characters at input_characters_per_1m (per 1M), milliseconds
 * at per_minute (per 60,000: billed pro rata to the millisecond, rounded up once per call), search units at
 * per_search_unit.
 */
export function costOfQuantity(price: Price, unit: QuantityUnit, quantity: number | bigint, multiplier: DecimalLike = ONE): number {
  const q = QUANTITY_PRICES[unit];
  const perUnit = price[q.field];
  if (perUnit === undefined) throw new PriceKindError(`This model is priced ${KIND_WORDS[priceKind(price)]}, not ${KIND_WORDS[unit]}`);
  const m = nonNegative(multiplier, 'multiplier');
  const usdTimesPer = decimalMul(count(quantity, unit), perUnit);
  const c = decimalCeilDiv(decimalMul(decimalMul(m, usdTimesPer), USD_TO_CREDITS), q.per);
  if (c > BigInt(Number.MAX_SAFE_INTEGER)) throw new CostOutOfRangeError();
  return Number(c);
}

/** What was used, tagged by the kind of price that bills it. */
export type Usage =
  | { kind: 'tokens'; tokens: TokenUsage }
  | { kind: 'unit'; units: number | bigint }
  | { kind: 'second'; seconds: DecimalLike }
  | { kind: 'quantity'; unit: QuantityUnit; quantity: number | bigint };

/** The cost of a finished call; throws PriceKindError when the usage is not the model's kind of price. */
export function costOf(price: Price, usage: Usage, multiplier: DecimalLike = ONE): number {
  switch (usage.kind) {
    case 'tokens':
      return costOfUsage(price, usage.tokens, multiplier);
    case 'unit':
      return costOfUnits(price, usage.units, multiplier);
    case 'second':
      return costOfSeconds(price, usage.seconds, multiplier);
    case 'quantity':
      return costOfQuantity(price, usage.unit, usage.quantity, multiplier);
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
  /** The most a call can count in its model's quantity unit (characters, milliseconds, search units). */
  quantity?: number | bigint;
}

/**
 * The cost of the most a request can use, by the model's kind of price: the amount to hold before calling
 * upstream. Token prompts are held at the dearest input dimension and completions at the dearest output dimension
 * (every prompt token might be a 1-hour cache write, every output token reasoning), from the long-context block
 * too when the prompt may exceed its threshold, so the final charge (costOf with the real usage) is never above it
 * for the same counts.
 */
export function estimateCost(price: Price, want: UsageEstimate, multiplier: DecimalLike = ONE): number {
  const kind = priceKind(price);
  switch (kind) {
    case 'characters':
    case 'milliseconds':
    case 'search_units': {
      // Beside token prices, the call may be billed either way: hold the dearer.
      const byQuantity = costOfQuantity(price, kind, want.quantity ?? 0, multiplier);
      return hasTokenPrices(price) ? Math.max(byQuantity, estimateCost(tokenPricesOf(price), want, multiplier)) : byQuantity;
    }
    case 'tokens': {
      const longContextMayApply = price.above_200k !== undefined && Number(want.promptTokens ?? 0) > LONG_CONTEXT_THRESHOLD;
      if (typeof want.promptTokens !== 'bigint' && typeof want.maxCompletionTokens !== 'bigint') {
        // Safe-integer arithmetic when it is exact (token-rates.ts); the decimals below otherwise, and for every error.
        const rates = integerRates(price, longContextMayApply ? 'estimate-long' : 'estimate', multiplier, (m) => [
          scaled(highestPrice(price, INPUT_DIMENSIONS, longContextMayApply), m, PER_1M_TOKENS_TO_CREDITS),
          scaled(highestPrice(price, OUTPUT_DIMENSIONS, longContextMayApply), m, PER_1M_TOKENS_TO_CREDITS),
        ]);
        const fast = rates && sumCeil(rates, [want.promptTokens ?? 0, want.maxCompletionTokens ?? 0]);
        if (fast !== null) return fast;
      }
      const m = nonNegative(multiplier, 'multiplier');
      const prompt = count(want.promptTokens ?? 0, 'promptTokens');
      const longContext = decimalCompare(prompt, decimal(LONG_CONTEXT_THRESHOLD)) > 0;
      const usd = decimalAdd(
        decimalMul(prompt, highestPrice(price, INPUT_DIMENSIONS, longContext)),
        decimalMul(count(want.maxCompletionTokens ?? 0, 'maxCompletionTokens'), highestPrice(price, OUTPUT_DIMENSIONS, longContext)),
      );
      return credits(decimalMul(decimalMul(m, usd), PER_1M_TOKENS_TO_CREDITS));
    }
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

/** The token prices of a price, without its quantity price. */
function tokenPricesOf(price: Price): Price {
  const { input_characters_per_1m: _c, per_minute: _m, per_search_unit: _s, ...tokens } = price;
  return tokens;
}
