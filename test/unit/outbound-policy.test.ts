import { checkedAddresses, OutboundPolicy, refusalOfUrl, STRICT_OUTBOUND } from '../../src/domain/outbound/address-policy';

const EMBEDDED: OutboundPolicy = { allowLoopback: true, allow: [] };
const refusal = (policy: OutboundPolicy, url: string) => refusalOfUrl(policy, new URL(url));

describe('outbound policy: public addresses only', () => {
  it('refuses every non-public literal form in production, whatever notation the URL uses', () => {
    const cases: Array<[string, string]> = [
      ['https://127.0.0.1/', 'loopback'],
      ['https://2130706433/', 'loopback'],
      ['https://0x7f000001/', 'loopback'],
      ['https://127.1/', 'loopback'],
      ['https://017700000001/', 'loopback'],
      ['https://[::1]/', 'loopback'],
      ['https://[::ffff:127.0.0.1]/', 'loopback'],
      ['https://[::ffff:7f00:1]/', 'loopback'],
      ['https://localhost/', 'loopback'],
      ['https://api.localhost/', 'loopback'],
      ['https://169.254.169.254/', 'linkLocal'],
      ['https://[fe80::1]/', 'linkLocal'],
      ['https://10.0.0.1/', 'private'],
      ['https://172.16.5.4/', 'private'],
      ['https://192.168.1.1/', 'private'],
      ['https://100.64.0.1/', 'carrierGradeNat'],
      ['https://[fd00::1]/', 'uniqueLocal'],
      ['https://0.0.0.0/', 'unspecified'],
      ['https://[::]/', 'unspecified'],
      ['https://224.0.0.1/', 'multicast'],
      ['https://[ff02::1]/', 'multicast'],
      ['https://255.255.255.255/', 'broadcast'],
      ['https://240.0.0.1/', 'reserved'],
      ['https://[64:ff9b::a00:1]/', 'rfc6052'],
      ['https://[2002:7f00:1::]/', '6to4'],
    ];
    for (const [url, range] of cases) expect([url, refusal(STRICT_OUTBOUND, url)]).toEqual([url, `not a public address (${range})`]);
  });

  it('allows public https only in production; the embedded default adds loopback over http', () => {
    expect(refusal(STRICT_OUTBOUND, 'https://hooks.example.com/x')).toBeNull();
    expect(refusal(STRICT_OUTBOUND, 'https://93.184.216.34/x')).toBeNull();
    expect(refusal(STRICT_OUTBOUND, 'https://[2606:2800:220:1::1]/x')).toBeNull();
    expect(refusal(STRICT_OUTBOUND, 'http://hooks.example.com/x')).toBe('must be an https URL');
    expect(refusal(STRICT_OUTBOUND, 'http://127.0.0.1/x')).toBe('must be an https URL');
    expect(refusal(STRICT_OUTBOUND, 'ftp://hooks.example.com/x')).toBe('must be an https URL');
    expect(refusal(STRICT_OUTBOUND, 'https://user:pw@hooks.example.com/x')).toBe('must not carry credentials');

    expect(refusal(EMBEDDED, 'http://127.0.0.1:8080/x')).toBeNull();
    expect(refusal(EMBEDDED, 'http://localhost:8080/x')).toBeNull();
    expect(refusal(EMBEDDED, 'http://[::1]:8080/x')).toBeNull();
    expect(refusal(EMBEDDED, 'http://hooks.example.com/x')).toBe('must be an https URL (or http to a loopback host)');
    expect(refusal(EMBEDDED, 'https://10.0.0.1/x')).toBe('not a public address (private)');
    expect(refusal(EMBEDDED, 'https://169.254.169.254/x')).toBe('not a public address (linkLocal)');
  });

  it('OUTBOUND_ALLOWLIST admits listed names, addresses and ranges, over http too', () => {
    const listed: OutboundPolicy = { allowLoopback: false, allow: ['hooks.internal', '10.0.0.0/8', '192.168.1.7', 'fd00::/8'] };
    expect(refusal(listed, 'http://hooks.internal:9000/x')).toBeNull();
    expect(refusal(listed, 'HTTP://HOOKS.INTERNAL/x')).toBeNull();
    expect(refusal(listed, 'http://10.2.3.4/x')).toBeNull();
    expect(refusal(listed, 'https://[::ffff:10.2.3.4]/x')).toBeNull();
    expect(refusal(listed, 'https://192.168.1.7/x')).toBeNull();
    expect(refusal(listed, 'https://[fd00::5]/x')).toBeNull();
    expect(refusal(listed, 'https://192.168.1.8/x')).toBe('not a public address (private)');
    expect(refusal(listed, 'https://other.internal.hooks.internal.evil/x')).toBeNull(); // a name: checked when resolved
    expect(refusal(listed, 'http://other.example/x')).toBe('must be an https URL');
  });

  it('checks every resolved address: one refused address refuses the name', async () => {
    const dns = (map: Record<string, string[]>) => async (host: string) => map[host] ?? [];
    const resolve = dns({ 'mixed.example': ['93.184.216.34', '10.0.0.1'], 'public.example': ['93.184.216.34', '2606:2800:220:1::1'], 'mapped.example': ['::ffff:169.254.169.254'] });
    await expect(checkedAddresses(STRICT_OUTBOUND, 'public.example', resolve)).resolves.toEqual(['93.184.216.34', '2606:2800:220:1::1']);
    await expect(checkedAddresses(STRICT_OUTBOUND, 'mixed.example', resolve)).rejects.toThrow('not a public address (private)');
    await expect(checkedAddresses(STRICT_OUTBOUND, 'mapped.example', resolve)).rejects.toThrow('not a public address (linkLocal)');
    await expect(checkedAddresses(STRICT_OUTBOUND, 'nothing.example', resolve)).rejects.toThrow('the host has no address');
    await expect(checkedAddresses(STRICT_OUTBOUND, 'localhost', resolve)).rejects.toThrow('not a public address (loopback)');
    await expect(checkedAddresses({ ...STRICT_OUTBOUND, allow: ['mixed.example'] }, 'mixed.example', resolve)).resolves.toHaveLength(2);
  });
});
