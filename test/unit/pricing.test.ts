import {
  CREDITS_PER_USD,
  type Price,
  costOf,
  costOfQuantity,
  costOfSeconds,
  costOfTokens,
  costOfUnits,
  costOfUsage,
  creditsToUsd,
  estimateCost,
  hasTokenPrices,
  priceKind,
} from '../../src/domain/pricing/cost';
import { NO_TOKENS } from '../../src/domain/pricing/usage';
import {
  MAX_DECIMAL_EXPONENT,
  ONE,
  ZERO,
  decimal,
  decimalAdd,
  decimalCeil,
  decimalCompare,
  decimalMul,
  decimalToString,
  parseDecimal,
} from '../../src/domain/pricing/decimal';
import { CostOutOfRangeError, DomainError, PriceKindError } from '../../src/domain/errors';
import { plainUsage } from '../../src/domain/pricing/usage';

const d = decimal;
const gpt4oMini: Price = { input_per_1m: d(0.15), output_per_1m: d(0.6) };
const embedding: Price = { input_per_1m: d(0.02) };
const dalle3: Price = { per_unit: d(0.04) };
const perSecond: Price = { per_second: d(0.1) };

describe('Decimal', () => {
  it.each([
    ['0.15', 15n, 2],
    ['0.60', 6n, 1],
    ['15', 15n, 0],
    ['1500', 1500n, 0],
    ['-2.50', -25n, 1],
    ['.5', 5n, 1],
    ['5.', 5n, 0],
    ['+7', 7n, 0],
    ['1e-7', 1n, 7],
    ['1.5E+21', 15n * 10n ** 20n, 0],
    ['2.5e3', 2500n, 0],
    ['0', 0n, 0],
    ['0.000', 0n, 0],
    [' 3.25 ', 325n, 2],
  ])('parses %j exactly', (text, digits, scale) => {
    expect(parseDecimal(text)).toEqual({ digits, scale });
  });

  it('reads a number from its shortest round-trip string, not its binary value', () => {
    expect(d(0.15)).toEqual({ digits: 15n, scale: 2 });
    expect(d(0.1)).toEqual({ digits: 1n, scale: 1 });
    expect(d(1e-7)).toEqual({ digits: 1n, scale: 7 });
    expect(d(1e21)).toEqual({ digits: 10n ** 21n, scale: 0 });
    expect(d(5e-324)).toEqual({ digits: 5n, scale: 324 });
    expect(d(0.6)).toEqual(d('0.60'));
    expect(d(12n)).toEqual({ digits: 12n, scale: 0 });
    expect(d(d('1.10'))).toEqual({ digits: 11n, scale: 1 });
  });

  it.each(['', '.', 'abc', '1.2.3', '1e', 'e5', '0x10', '1_000', 'NaN', 'Infinity', '1e401', '1e-100000', '1e99999999999'])(
    'rejects %j without echoing it',
    (text) => {
      expect(() => parseDecimal(text)).toThrow(RangeError);
      try {
        parseDecimal(text);
      } catch (err) {
        if (text.length > 2) expect((err as Error).message).not.toContain(text);
      }
    },
  );

  it('accepts exponents up to the limit and rejects non-finite numbers', () => {
    expect(parseDecimal(`1e-${MAX_DECIMAL_EXPONENT}`).scale).toBe(MAX_DECIMAL_EXPONENT);
    expect(() => d(Number.NaN)).toThrow(RangeError);
    expect(() => d(Number.POSITIVE_INFINITY)).toThrow(RangeError);
  });

  it('adds, multiplies, compares and takes the ceiling exactly', () => {
    expect(decimalAdd(d(0.1), d(0.2))).toEqual(d('0.3'));
    expect(decimalMul(d(3), d(0.1))).toEqual(d('0.3'));
    expect(decimalCompare(decimalAdd(d(0.1), d(0.2)), d(0.3))).toBe(0);
    expect(decimalCompare(d('0.1'), d('0.09'))).toBe(1);
    expect(decimalCompare(d('-1'), ZERO)).toBe(-1);
    expect(decimalCeil(d('2'))).toBe(2n);
    expect(decimalCeil(d('2.000001'))).toBe(3n);
    expect(decimalCeil(d('0.3'))).toBe(1n);
    expect(decimalCeil(ZERO)).toBe(0n);
    expect(decimalCeil(d('-2.5'))).toBe(-2n);
    expect(decimalCeil(ONE)).toBe(1n);
  });

  it('prints plain decimal notation', () => {
    expect(decimalToString(d(1e-7))).toBe('0.0000001');
    expect(decimalToString(d('-2.50'))).toBe('-2.5');
    expect(decimalToString(d(1e21))).toBe('1000000000000000000000');
    expect(decimalToString(d('0.15'))).toBe('0.15');
  });
});

describe('costOfTokens', () => {
  it('bills the issue example: gpt-4o-mini, 1000 prompt + 500 completion tokens = 225 credits', () => {
    // ceil((1000 × 0.15 + 500 × 0.60) × 500000 / 1000000) = ceil(225)
    expect(costOfTokens(gpt4oMini, { promptTokens: 1000, completionTokens: 500 })).toBe(225);
    expect(costOfTokens(gpt4oMini, { promptTokens: 1000, completionTokens: 500 }, 1)).toBe(225);
  });

  it('applies a group multiplier before the ceiling (vip 0.5)', () => {
    expect(costOfTokens(gpt4oMini, { promptTokens: 1000, completionTokens: 500 }, d(0.5))).toBe(113); // ceil(112.5)
    expect(costOfTokens(gpt4oMini, { promptTokens: 1000, completionTokens: 500 }, '0.5')).toBe(113);
    expect(costOfTokens(gpt4oMini, { promptTokens: 2000, completionTokens: 1000 }, 0.5)).toBe(225);
    expect(costOfTokens(gpt4oMini, { promptTokens: 1000, completionTokens: 500 }, 0)).toBe(0);
  });

  it('rounds any fraction of a credit up', () => {
    expect(costOfTokens(gpt4oMini, { promptTokens: 1, completionTokens: 0 })).toBe(1); // 0.075
    expect(costOfTokens({ input_per_1m: d(3), output_per_1m: d(15) }, { promptTokens: 1, completionTokens: 1 })).toBe(9);
  });

  it('is exact where binary floating point gets the ceiling wrong', () => {
    // 3 × 0.1 + 7 × 1.1 = 8.0 exactly, × 0.5 = 4. In floats: 8.000000000000002 × 0.5 -> ceil 5.
    const price: Price = { input_per_1m: d(0.1), output_per_1m: d(1.1) };
    expect(Math.ceil((3 * 0.1 + 7 * 1.1) * 500000 / 1000000)).toBe(5);
    expect(costOfTokens(price, { promptTokens: 3, completionTokens: 7 })).toBe(4);
    // 10 × 0.2 + 110 × 4.4 = 486, × 0.5 = 243 (floats: 244).
    const p2: Price = { input_per_1m: d(0.2), output_per_1m: d(4.4) };
    expect(Math.ceil((10 * 0.2 + 110 * 4.4) * 500000 / 1000000)).toBe(244);
    expect(costOfTokens(p2, { promptTokens: 10, completionTokens: 110 })).toBe(243);
    // 0.1 + 0.2 style: 10 tokens at 0.1 + 10 at 0.2 = 3 USD per 1M tokens... = 1.5 credits -> 2, and 20+20 -> 3.
    const p3: Price = { input_per_1m: d(0.1), output_per_1m: d(0.2) };
    expect(costOfTokens(p3, { promptTokens: 20, completionTokens: 20 })).toBe(3);
  });

  it('charges 0 credits for 0 tokens, and treats a missing output price as 0', () => {
    expect(costOfTokens(gpt4oMini, { promptTokens: 0, completionTokens: 0 })).toBe(0);
    expect(costOfTokens(embedding, { promptTokens: 1_000_000, completionTokens: 999 })).toBe(10_000); // 0.02 USD
  });

  it('handles huge token counts exactly and refuses a cost beyond a safe integer', () => {
    const t = Number.MAX_SAFE_INTEGER; // 9007199254740991
    // ceil(9007199254740991 × 0.15 × 0.5) = ceil(675539944105574.325) = 675539944105575
    expect(costOfTokens(gpt4oMini, { promptTokens: t, completionTokens: 0 })).toBe(675539944105575);
    expect(costOfTokens(gpt4oMini, { promptTokens: 10 ** 15, completionTokens: 10 ** 15 })).toBe(375_000_000_000_000);
    expect(() => costOfTokens({ input_per_1m: d(100) }, { promptTokens: t, completionTokens: 0 })).toThrow(CostOutOfRangeError);
    expect(() => costOfTokens({ input_per_1m: d(10 ** 12) }, { promptTokens: 10 ** 15, completionTokens: 0 })).toThrow(CostOutOfRangeError);
  });

  it('rejects negative, fractional or unsafe counts and negative multipliers', () => {
    expect(() => costOfTokens(gpt4oMini, { promptTokens: -1, completionTokens: 0 })).toThrow(RangeError);
    expect(() => costOfTokens(gpt4oMini, { promptTokens: 1.5, completionTokens: 0 })).toThrow(RangeError);
    expect(() => costOfTokens(gpt4oMini, { promptTokens: 2 ** 60, completionTokens: 0 })).toThrow(RangeError);
    expect(() => costOfTokens(gpt4oMini, { promptTokens: 0, completionTokens: -1 })).toThrow(RangeError);
    expect(() => costOfTokens(gpt4oMini, { promptTokens: 1, completionTokens: 1 }, -0.5)).toThrow(RangeError);
  });
});

describe('costOfUnits and costOfSeconds', () => {
  it('bills images per unit: dall-e-3 at 0.04 USD = 20000 credits each', () => {
    expect(costOfUnits(dalle3, 1)).toBe(20_000);
    expect(costOfUnits(dalle3, 4)).toBe(80_000);
    expect(costOfUnits(dalle3, 4, 0.5)).toBe(40_000);
    expect(costOfUnits(dalle3, 0)).toBe(0);
  });

  it('is exact where floats are not: 3 × 0.1 per unit = 150000, not 150001', () => {
    expect(Math.ceil(3 * 0.1 * 500000)).toBe(150001);
    expect(costOfUnits({ per_unit: d(0.1) }, 3)).toBe(150_000);
    expect(Math.ceil(5 * 0.07 * 500000)).toBe(175001);
    expect(costOfUnits({ per_unit: d(0.07) }, 5)).toBe(175_000);
    // multiplier 0.1 × 3 units × 0.1 = 0.03 USD = 15000 credits exactly
    expect(costOfUnits({ per_unit: d(0.1) }, 3, 0.1)).toBe(15_000);
    // the smallest fraction still rounds up
    expect(costOfUnits({ per_unit: d('0.0000000001') }, 1)).toBe(1);
  });

  it('bills video per second of requested duration, fractions included', () => {
    expect(costOfSeconds(perSecond, 8)).toBe(400_000); // 0.80 USD
    expect(costOfSeconds(perSecond, 3, 1)).toBe(150_000); // floats: 150001
    expect(costOfSeconds(perSecond, '2.5')).toBe(125_000);
    expect(costOfSeconds(perSecond, 0)).toBe(0);
    expect(costOfSeconds({ per_second: d('0.15') }, 7, d('1.1'))).toBe(577_500);
    expect(() => costOfSeconds(perSecond, -1)).toThrow(RangeError);
  });
});

describe('price kinds', () => {
  it('names the kind of a price', () => {
    expect(priceKind(gpt4oMini)).toBe('tokens');
    expect(priceKind(embedding)).toBe('tokens');
    expect(priceKind(dalle3)).toBe('unit');
    expect(priceKind(perSecond)).toBe('second');
  });

  it('throws a domain error when the usage is not the model’s kind of price', () => {
    expect(() => costOfUnits(gpt4oMini, 1)).toThrow(PriceKindError);
    expect(() => costOfUnits(gpt4oMini, 1)).toThrow('This model is priced per token, not per unit');
    expect(() => costOfTokens(dalle3, { promptTokens: 1, completionTokens: 1 })).toThrow(PriceKindError);
    expect(() => costOfSeconds(dalle3, 5)).toThrow(PriceKindError);
    expect(() => costOfUnits(perSecond, 1)).toThrow(PriceKindError);
    expect(() => priceKind({})).toThrow(PriceKindError);
    expect(() => priceKind({ per_unit: d(1), per_second: d(1) })).toThrow(PriceKindError);
    const err = (() => {
      try {
        costOfUnits(gpt4oMini, 1);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(DomainError);
    expect(err).toMatchObject({ status: 400, code: 'price_kind_mismatch', param: 'model' });
  });

  it('dispatches costOf by usage kind', () => {
    expect(costOf(gpt4oMini, { kind: 'tokens', tokens: plainUsage(1000, 500) })).toBe(225);
    expect(costOf(dalle3, { kind: 'unit', units: 2 }, 0.5)).toBe(20_000);
    expect(costOf(perSecond, { kind: 'second', seconds: 5 })).toBe(250_000);
    expect(() => costOf(dalle3, { kind: 'second', seconds: 5 })).toThrow(PriceKindError);
  });
});

describe('estimateCost', () => {
  it('holds the most a request can use, by the model’s kind of price', () => {
    expect(estimateCost(gpt4oMini, { promptTokens: 1000, maxCompletionTokens: 500 })).toBe(225);
    expect(estimateCost(gpt4oMini, { promptTokens: 1000 })).toBe(75);
    expect(estimateCost(dalle3, {})).toBe(20_000);
    expect(estimateCost(dalle3, { units: 3 }, 0.5)).toBe(30_000);
    expect(estimateCost(perSecond, { seconds: 10 })).toBe(500_000);
    expect(() => estimateCost(perSecond, {})).toThrow(PriceKindError);
  });

  it('is never below the final cost for the same inputs', () => {
    const usage = { promptTokens: 1234, completionTokens: 567 };
    expect(estimateCost(gpt4oMini, { promptTokens: 1234, maxCompletionTokens: 567 }, 0.3)).toBe(
      costOfTokens(gpt4oMini, usage, 0.3),
    );
  });
});

describe('credits and USD', () => {
  it('500,000 credits = 1.00 USD, printed exactly', () => {
    expect(CREDITS_PER_USD).toBe(500_000n);
    expect(creditsToUsd(500_000)).toBe('1');
    expect(creditsToUsd(225)).toBe('0.00045');
    expect(creditsToUsd(1)).toBe('0.000002');
    expect(creditsToUsd(0)).toBe('0');
    expect(creditsToUsd(123_456_789n)).toBe('246.913578');
  });
});

describe('quantity prices: characters, minutes billed to the millisecond, search units', () => {
  const price = (p: Record<string, string>) => Object.fromEntries(Object.entries(p).map(([k, v]) => [k, decimal(v)])) as Price;

  it('characters at input_characters_per_1m: 15 USD per 1M = 7.5 credits a character, rounded up once', () => {
    expect(costOfQuantity(price({ input_characters_per_1m: '15' }), 'characters', 41)).toBe(308); // 307.5
    expect(costOfQuantity(price({ input_characters_per_1m: '15' }), 'characters', 41, '0.5')).toBe(154); // 153.75
  });

  it('per_minute bills the millisecond: 12.5 s at 0.006 USD a minute is 625 credits, not a started minute', () => {
    expect(costOfQuantity(price({ per_minute: '0.006' }), 'milliseconds', 12_500)).toBe(625);
    expect(costOfQuantity(price({ per_minute: '0.006' }), 'milliseconds', 1)).toBe(1); // 0.05, rounded up
    expect(costOfQuantity(price({ per_minute: '0.006' }), 'milliseconds', 60_000)).toBe(3000);
  });

  it('search units at per_search_unit', () => {
    expect(costOfQuantity(price({ per_search_unit: '0.002' }), 'search_units', 2)).toBe(2000);
  });

  it('a quantity price may sit beside token prices; the hold is the dearer of the two', () => {
    const both = price({ input_per_1m: '0.6', audio_output_per_1m: '12', input_characters_per_1m: '15' });
    expect(priceKind(both)).toBe('characters');
    expect(hasTokenPrices(both)).toBe(true);
    expect(costOfUsage(both, { ...NO_TOKENS, input: 10, output: 1000, audioOutput: 1000 })).toBe(6003);
    // 100 characters: 750 credits; 30 prompt + 600 completion tokens at the dearest output price (12): 3609.
    expect(estimateCost(both, { quantity: 100, promptTokens: 30, maxCompletionTokens: 600 })).toBe(Math.max(750, Math.ceil((30 * 0.6 + 600 * 12) / 2)));
    expect(() => priceKind(price({ per_minute: '1', per_search_unit: '1' }))).toThrow('more than one kind');
    expect(() => priceKind(price({ per_unit: '1', per_minute: '1' }))).toThrow('more than one kind');
    expect(() => costOfQuantity(price({ input_per_1m: '1' }), 'characters', 1)).toThrow('not per character');
  });
});

describe('token costs in safe integers', () => {
  // The reference: the formula in BigInt decimals, ceil(m × Σ tokens × price × 500000 / 1000000).
  const reference = (prices: string[], counts: number[], m: string) => {
    let usd = ZERO;
    counts.forEach((c, i) => (usd = decimalAdd(usd, decimalMul(decimal(BigInt(c)), decimal(prices[i])))));
    return Number(decimalCeil(decimalMul(decimalMul(decimal(m), usd), decimal('0.5'))));
  };
  let seed = 7;
  const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
  const priceText = () => ['0', '0.15', '0.6', '2.5', '0.075', '15', '0.0000003', '1234.56789', '3e-7', '0.1'][rand(10)];
  const countOf = () => [0, 1, 7, 999, 123_456, 2 ** 31, 9_007_199_254][rand(7)];

  it('equals the decimal formula for the hold and the charge, fast or not (random prices, counts, multipliers)', () => {
    for (let i = 0; i < 2_000; i++) {
      const input = priceText();
      const output = priceText();
      const m = ['1', '0.5', '1.25', '0.333', '7'][rand(5)];
      const price: Price = { input_per_1m: decimal(input), output_per_1m: decimal(output) };
      const usage = plainUsage(countOf(), countOf());
      expect(costOfUsage(price, usage, decimal(m))).toBe(reference([input, output], [usage.input, usage.output], m));
      const want = { promptTokens: countOf(), maxCompletionTokens: countOf() };
      expect(estimateCost(price, want, decimal(m))).toBe(reference([input, output], [want.promptTokens, want.maxCompletionTokens], m));
    }
  });

  it('refuses what the decimals refuse, whatever the price', () => {
    const free: Price = { input_per_1m: decimal('0'), output_per_1m: decimal('0') };
    expect(() => costOfUsage(free, plainUsage(1.5, 0))).toThrow(RangeError);
    expect(() => estimateCost(free, { promptTokens: -1 })).toThrow(RangeError);
    expect(() => costOfUsage({ input_per_1m: decimal('1') }, plainUsage(1, 1), decimal('-1'))).toThrow(RangeError);
  });
});
