import type { UpstreamCall } from '../../domain/ports/upstream';
import { UpstreamError } from '../../domain/ports/upstream-error';
import { isAnthropicModel } from './vertex';

/**
 * One adapter for a cloud that serves two publishers' models at one channel (Vertex AI: Claude through Anthropic's
 * wire format, the rest through Google's): each method goes to the adapter of the call's model. A method only one
 * of them has (embeddings) refuses a model of the other as a 400 the client can read.
 */
export function byPublisher<A extends object>(anthropic: Partial<A>, google: Partial<A>): A {
  const out: Record<string, unknown> = {};
  const methods = (a: object) => Object.entries(a).filter(([, v]) => typeof v === 'function').map(([k]) => k);
  for (const name of new Set([...methods(anthropic), ...methods(google)])) {
    out[name] = (req: unknown, call: UpstreamCall, ...rest: unknown[]) => {
      const adapter = (isAnthropicModel(call.upstreamModel) ? anthropic : google) as Record<string, unknown>;
      const method = adapter[name] as ((...args: unknown[]) => unknown) | undefined;
      if (!method) throw new UpstreamError('status', `${call.upstreamModel} does not serve this endpoint on this channel`, 400, 'unsupported_endpoint');
      return method(req, call, ...rest);
    };
  }
  return out as A;
}
