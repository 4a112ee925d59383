import { createHmac, timingSafeEqual } from 'node:crypto';
import { derivedKey } from '../secrets/derived-key';

/**
 * Ids of Responses the gateway hands out for native channels: `resp_<payload>.<sig>`, where the payload is the
 * base64url of `[channel name, the upstream's id]` and the signature an HMAC-SHA256 (first 16 bytes) over the
 * account, the channel and the upstream id, keyed from GATEWAY_SECRET by HKDF (info `response-ids`).
 *
 * Why: a stored Response lives on the one upstream that made it, so a follow-up (`previous_response_id`, GET,
 * DELETE, cancel, input_items) must reach that channel, on any replica; and the upstream account is shared by every
 * key of the gateway, so an id works only for the account it was made for. Nothing is kept in the database.
 */

const SIG_BYTES = 16;
const PREFIX = 'resp_';
/** Bounds what an id may be before any decoding work (upstream ids are short). */
const MAX_ID_LENGTH = 1024;
const ID_PATTERN = /^resp_([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{22})$/;

export interface StoredResponseRef {
  channel: string;
  upstreamId: string;
}

export class ResponseIds {
  private readonly key: Buffer;

  constructor(gatewaySecret: string) {
    this.key = derivedKey(gatewaySecret, 'response-ids', 'sign response ids');
  }

  private mac(accountId: number, ref: StoredResponseRef): Buffer {
    // Length-prefixed fields: no two (account, channel, id) triples share their input.
    const input = `v1\n${accountId}\n${ref.channel.length}:${ref.channel}\n${ref.upstreamId.length}:${ref.upstreamId}`;
    return createHmac('sha256', this.key).update(input).digest().subarray(0, SIG_BYTES);
  }

  /** The id the client sees for `upstreamId`, made by `channel` for `accountId`. */
  wrap(accountId: number, ref: StoredResponseRef): string {
    const payload = Buffer.from(JSON.stringify([ref.channel, ref.upstreamId])).toString('base64url');
    return `${PREFIX}${payload}.${this.mac(accountId, ref).toString('base64url')}`;
  }

  /** The channel and upstream id behind an id this gateway made for `accountId`; undefined for any other string. */
  unwrap(accountId: number, id: unknown): StoredResponseRef | undefined {
    if (typeof id !== 'string' || id.length > MAX_ID_LENGTH || !id.startsWith(PREFIX)) return undefined;
    const m = ID_PATTERN.exec(id);
    if (!m) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(m[1], 'base64url').toString('utf8'));
    } catch {
      return undefined;
    }
    if (!Array.isArray(parsed) || parsed.length !== 2 || typeof parsed[0] !== 'string' || typeof parsed[1] !== 'string') return undefined;
    const ref = { channel: parsed[0], upstreamId: parsed[1] };
    const given = Buffer.from(m[2], 'base64url');
    const expected = this.mac(accountId, ref);
    return given.length === expected.length && timingSafeEqual(given, expected) ? ref : undefined;
  }
}
