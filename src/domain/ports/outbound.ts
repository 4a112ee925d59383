import type { OutboundPolicy } from '../outbound/address-policy';

export interface OutboundPost {
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
}

/** How a call made for a user ended, in words that reveal nothing about a network the user cannot see. */
export type OutboundResult = { ok: true; status: number } | { ok: false; status: null; error: 'refused' | 'timeout' | 'failed'; reason?: string };

/** A POST made for a user (a webhook), to an address `policy` allows; the adapter is src/upstream/public-request.ts. */
export type PostOutbound = (policy: OutboundPolicy, target: string, req: OutboundPost) => Promise<OutboundResult>;
