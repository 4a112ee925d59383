-- What a ledger row's `units` counts, for prices that bill a quantity: 'characters' (speech input),
-- 'milliseconds' (audio, priced per minute and billed to the millisecond), 'search_units' (rerank), 'images',
-- 'videos'. Empty for calls billed by tokens.
ALTER TABLE ledger ADD COLUMN unit TEXT NOT NULL DEFAULT '';
