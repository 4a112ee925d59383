import type { UpstreamCall } from '../../domain/ports/upstream';
import { UpstreamError } from '../../domain/ports/upstream-error';

/**
 * Claude models are Anthropic's: on Vertex its publisher's (`claude-sonnet-4-5@20250929`), on Bedrock its model ids and
 * inference profiles (`anthropic.claude-...`, `us.anthropic.claude-...`); every other model is the cloud's own.
 */
export function isAnthropicModel(model: string): boolean {
  return /^claude|(^|[.:/])anthropic\.claude/i.test(model);
}

/**
 * One adapter for a cloud that serves two publishers' models at one channel (Vertex AI: Claude through Anthropic's
 * wire format, the rest through Google's; Bedrock: Claude through InvokeModel, the rest through Converse): each method
 * goes to the adapter of the call's model. A method only one of them has (embeddings) refuses a model of the other as
 * a 400 the client can read.
 */
export function byPublisher<A extends object>(anthropic: Partial<A>, own: Partial<A>): A {
  const out: Record<string, unknown> = {};
  const methods = (a: object) => Object.entries(a).filter(([, v]) => typeof v === 'function').map(([k]) => k);
  for (const name of new Set([...methods(anthropic), ...methods(own)])) {
    out[name] = (req: unknown, call: UpstreamCall, ...rest: unknown[]) => {
      const adapter = (isAnthropicModel(call.upstreamModel) ? anthropic : own) as Record<string, unknown>;
      const method = adapter[name] as ((...args: unknown[]) => unknown) | undefined;
      if (!method) throw new UpstreamError('status', `${call.upstreamModel} does not serve this endpoint on this channel`, 400, 'unsupported_endpoint');
      return method(req, call, ...rest);
    };
  }
  return out as A;
}
