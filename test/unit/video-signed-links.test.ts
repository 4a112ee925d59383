import { VIDEO_LINK_TTL_SECONDS, VideoLinkSigner } from '../../src/domain/video/signed-links';

const SECRET = 'a-gateway-secret-of-at-least-32-characters!!';
const NOW = 1_700_000_000;

describe('signed video links', () => {
  const signer = new VideoLinkSigner(SECRET);

  it('signs /v1/files/video/<taskId>?exp=<unix>&sig=<base64url>, valid 24 hours by default', () => {
    const link = signer.signLink({ taskId: 'vid_abc123', nowSeconds: NOW });
    expect(link.expiresAt).toBe(NOW + VIDEO_LINK_TTL_SECONDS);
    expect(VIDEO_LINK_TTL_SECONDS).toBe(86_400);
    expect(link.path).toMatch(/^\/v1\/files\/video\/vid_abc123\?exp=1700086400&sig=[A-Za-z0-9_-]{43}$/);
    expect(signer.verifyPath(link.path, NOW)).toEqual({ ok: true, taskId: 'vid_abc123', expiresAt: NOW + 86_400 });
    expect(signer.verifyLink({ taskId: 'vid_abc123', exp: String(link.expiresAt), sig: link.sig }, NOW).ok).toBe(true);
  });

  it('is deterministic per secret, and a different secret rejects it', () => {
    const a = signer.signLink({ taskId: 't1', expiresAt: NOW });
    expect(new VideoLinkSigner(SECRET).signLink({ taskId: 't1', expiresAt: NOW }).sig).toBe(a.sig);
    expect(new VideoLinkSigner(SECRET + 'x').verifyPath(a.path, NOW)).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('expires after exp (exp itself is the last valid second)', () => {
    const link = signer.signLink({ taskId: 't1', expiresAt: NOW + 10 });
    expect(signer.verifyPath(link.path, NOW + 10).ok).toBe(true);
    expect(signer.verifyPath(link.path, NOW + 11)).toEqual({ ok: false, reason: 'expired' });
  });

  it('rejects tampering with the task id, the expiry or the signature', () => {
    const link = signer.signLink({ taskId: 'vid_1', expiresAt: NOW + 100 });
    const flip = (s: string) => (s[0] === 'A' ? 'B' : 'A') + s.slice(1);
    expect(signer.verifyLink({ taskId: 'vid_2', exp: String(NOW + 100), sig: link.sig }, NOW)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(signer.verifyLink({ taskId: 'vid_1', exp: String(NOW + 101), sig: link.sig }, NOW)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(signer.verifyLink({ taskId: 'vid_1', exp: String(NOW + 100), sig: flip(link.sig) }, NOW)).toEqual({ ok: false, reason: 'bad_signature' });
    // Extending an expired link does not revive it.
    expect(signer.verifyLink({ taskId: 'vid_1', exp: String(NOW + 999_999), sig: link.sig }, NOW + 200)).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it.each<[string, Record<string, unknown>]>([
    ['missing sig', { sig: undefined }],
    ['sig too short', { sig: 'A'.repeat(42) }],
    ['sig too long', { sig: 'A'.repeat(44) }],
    ['sig standard base64', { sig: '+'.repeat(43) }],
    ['sig non-canonical last char', { sig: 'A'.repeat(42) + 'B' }],
    ['repeated sig', { sig: ['x', 'y'] }],
    ['exp not digits', { exp: '1e9' }],
    ['exp negative', { exp: '-5' }],
    ['exp empty', { exp: '' }],
    ['exp too long', { exp: '1'.repeat(13) }],
    ['task id with slash', { taskId: 'a/b' }],
    ['task id empty', { taskId: '' }],
    ['task id not a string', { taskId: 7 }],
  ])('rejects a malformed link: %s', (_name, change) => {
    const link = signer.signLink({ taskId: 'vid_1', expiresAt: NOW + 100 });
    expect(signer.verifyLink({ taskId: 'vid_1', exp: String(NOW + 100), sig: link.sig, ...change }, NOW)).toEqual({ ok: false, reason: 'malformed' });
  });

  it('verifyPath rejects other paths, bad escapes and repeated query values', () => {
    const link = signer.signLink({ taskId: 'vid_1', expiresAt: NOW + 100 });
    expect(signer.verifyPath(link.path.replace('/v1/files/video/', '/v1/files/image/'), NOW).ok).toBe(false);
    expect(signer.verifyPath('/v1/files/video/%E0%A4%A?exp=1&sig=x', NOW)).toEqual({ ok: false, reason: 'malformed' });
    expect(signer.verifyPath(`${link.path}&sig=${link.sig}`, NOW)).toEqual({ ok: false, reason: 'malformed' });
    expect(signer.verifyPath('/v1/files/video/vid_1', NOW)).toEqual({ ok: false, reason: 'malformed' });
  });

  it('refuses to sign what it could not verify', () => {
    expect(() => signer.signLink({ taskId: 'a/b' })).toThrow(TypeError);
    expect(() => signer.signLink({ taskId: 't', expiresAt: 1.5 })).toThrow(TypeError);
    expect(() => new VideoLinkSigner('')).toThrow(TypeError);
  });
});
