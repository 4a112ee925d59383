import { createHmac } from 'node:crypto';
import OpenAI from 'openai';
import {
  generateWebhookSecret,
  signWebhook,
  verifyWebhook,
  webhookSecretKey,
} from '../../src/domain/webhooks/standard-webhooks';

// A fixed vector: secret, id, timestamp and body give one known signature (computed independently below).
const SECRET = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
const ID = 'msg_2KWPBgLlAfxdpx2AI54pPJ85f4W';
const BODY = JSON.stringify({ object: 'event', id: 'evt_1', type: 'video.completed', data: { id: 'vid_1' } });

describe('Standard Webhooks signing', () => {
  const now = () => Math.floor(Date.now() / 1000);

  it('generates whsec_ secrets of 24..64 random bytes (default 32), never the same twice', () => {
    const a = generateWebhookSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(webhookSecretKey(a)).toHaveLength(32);
    expect(generateWebhookSecret()).not.toBe(a);
    expect(webhookSecretKey(generateWebhookSecret(24))).toHaveLength(24);
    expect(webhookSecretKey(generateWebhookSecret(64))).toHaveLength(64);
    expect(() => generateWebhookSecret(23)).toThrow(RangeError);
    expect(() => generateWebhookSecret(65)).toThrow(RangeError);
  });

  it('signs "<id>.<timestamp>.<body>" with the base64-decoded part of the secret', () => {
    const ts = 1_700_000_000;
    const h = signWebhook(SECRET, ID, ts, BODY);
    const expected = createHmac('sha256', Buffer.alloc(32, 7)).update(`${ID}.${ts}.${BODY}`).digest('base64');
    expect(h).toEqual({ 'webhook-id': ID, 'webhook-timestamp': String(ts), 'webhook-signature': `v1,${expected}` });
    // A Buffer body signs the same bytes.
    expect(signWebhook(SECRET, ID, ts, Buffer.from(BODY))).toEqual(h);
  });

  it('rejects bad secrets, ids and timestamps when signing', () => {
    expect(() => signWebhook('not-a-secret', ID, 1, BODY)).toThrow(TypeError);
    expect(() => signWebhook('whsec_***', ID, 1, BODY)).toThrow(TypeError);
    expect(() => signWebhook('whsec_' + Buffer.alloc(8).toString('base64'), ID, 1, BODY)).toThrow(TypeError);
    expect(() => signWebhook(SECRET, 'a.b', 1, BODY)).toThrow(TypeError);
    expect(() => signWebhook(SECRET, '', 1, BODY)).toThrow(TypeError);
    expect(() => signWebhook(SECRET, ID, 1.5, BODY)).toThrow(TypeError);
    expect(() => signWebhook(SECRET, ID, -1, BODY)).toThrow(TypeError);
  });

  it('verifies its own signatures and refuses tampering, other secrets, and stale or future timestamps', () => {
    const t = 1_700_000_000;
    const h = signWebhook(SECRET, ID, t, BODY);
    expect(verifyWebhook(SECRET, h, BODY, { nowSeconds: t })).toEqual({ ok: true });
    expect(verifyWebhook(SECRET, h, BODY + ' ', { nowSeconds: t })).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyWebhook(SECRET, { ...h, 'webhook-id': 'msg_other' }, BODY, { nowSeconds: t })).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyWebhook(generateWebhookSecret(), h, BODY, { nowSeconds: t })).toEqual({ ok: false, reason: 'bad_signature' });
    // Tolerance 300 s either way, both sides of the edge.
    expect(verifyWebhook(SECRET, h, BODY, { nowSeconds: t + 300 }).ok).toBe(true);
    expect(verifyWebhook(SECRET, h, BODY, { nowSeconds: t + 301 })).toEqual({ ok: false, reason: 'too_old' });
    expect(verifyWebhook(SECRET, h, BODY, { nowSeconds: t - 300 }).ok).toBe(true);
    expect(verifyWebhook(SECRET, h, BODY, { nowSeconds: t - 301 })).toEqual({ ok: false, reason: 'too_new' });
    expect(verifyWebhook(SECRET, { ...h, 'webhook-timestamp': '17e8' }, BODY, { nowSeconds: t })).toEqual({ ok: false, reason: 'bad_timestamp' });
    expect(verifyWebhook(SECRET, { 'webhook-id': ID, 'webhook-timestamp': String(t) }, BODY)).toEqual({ ok: false, reason: 'missing_headers' });
  });

  it('accepts any one of several space-separated signatures (secret rotation) and skips other versions', () => {
    const t = 1_700_000_000;
    const h = signWebhook(SECRET, ID, t, BODY);
    const sig = h['webhook-signature'].slice(3);
    const headers = { ...h, 'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')} v2,${sig} v1,${sig}` };
    expect(verifyWebhook(SECRET, headers, BODY, { nowSeconds: t })).toEqual({ ok: true });
    expect(verifyWebhook(SECRET, { ...h, 'webhook-signature': `v2,${sig}` }, BODY, { nowSeconds: t })).toEqual({ ok: false, reason: 'bad_signature' });
    // Header names in any case, and fetch Headers.
    const upper = { 'Webhook-Id': h['webhook-id'], 'WEBHOOK-TIMESTAMP': h['webhook-timestamp'], 'Webhook-Signature': h['webhook-signature'] };
    expect(verifyWebhook(SECRET, upper, BODY, { nowSeconds: t })).toEqual({ ok: true });
    expect(verifyWebhook(SECRET, new Headers(h as unknown as Record<string, string>), BODY, { nowSeconds: t })).toEqual({ ok: true });
  });

  describe('interoperability: the openai SDK webhook helper verifies what we sign', () => {
    const client = new OpenAI({ apiKey: 'sk-unused', baseURL: 'http://127.0.0.1:9' });

    it('unwrap() accepts our headers and returns the parsed body', async () => {
      const secret = generateWebhookSecret();
      const headers = signWebhook(secret, 'msg_' + 'x'.repeat(20), now(), BODY);
      await expect(client.webhooks.unwrap(BODY, headers, secret)).resolves.toEqual(JSON.parse(BODY));
      await expect(client.webhooks.verifySignature(BODY, headers, secret)).resolves.toBeUndefined();
    });

    it('verifySignature() rejects a tampered body or a wrong secret', async () => {
      const secret = generateWebhookSecret();
      const headers = signWebhook(secret, ID, now(), BODY);
      await expect(client.webhooks.verifySignature(BODY.replace('vid_1', 'vid_2'), headers, secret)).rejects.toThrow(/signature/i);
      await expect(client.webhooks.verifySignature(BODY, headers, generateWebhookSecret())).rejects.toThrow(/signature/i);
    });

    it('we verify what an independent implementation of the convention signs', () => {
      // The Standard Webhooks reference algorithm, written out: base64(HMAC-SHA256(key, id.ts.body)).
      const secret = generateWebhookSecret(24);
      const t = now();
      const sig = createHmac('sha256', Buffer.from(secret.slice(6), 'base64')).update(`${ID}.${t}.${BODY}`).digest('base64');
      expect(verifyWebhook(secret, { 'webhook-id': ID, 'webhook-timestamp': String(t), 'webhook-signature': `v1,${sig}` }, BODY)).toEqual({ ok: true });
    });
  });
});
