import type { Decimal } from '../pricing/decimal';
import type { RelayCaller } from '../relay/caller';
import type { ModelRoute } from '../relay/resolve';
import type { BatchEndpoint } from './batch-record';

/** What the batch runner needs of the transport and the relay (wired by the composition root). */

/** How one line's call ended: the answer's body, or the error as the batch's API would have answered it. */
export type LineOutcome = { ok: true; body: unknown } | { ok: false; status: number; code: string; body: unknown; retryAfterSeconds?: number };

/** Runs one line as its route would take the same body: checked, relayed, billed (src/api/batch-lines.ts). */
export type BatchLineCall = (endpoint: BatchEndpoint, body: unknown, caller: RelayCaller) => Promise<LineOutcome>;

/** The most a line can cost at `multiplier`, and its prompt as counted locally; throws the route's 400 for a bad body. */
export type BatchLineEstimate = (endpoint: BatchEndpoint, body: unknown, route: ModelRoute, multiplier: Decimal) => { prompt: number; amount: number };
