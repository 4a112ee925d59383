import { handshakeProblem } from '../../src/api/websocket-handshake';

/** The gateway refuses what `ws` would refuse, and passes what it would pass (RFC 6455 §4.2.1). */
describe('WebSocket handshake checks', () => {
  const ok = { upgrade: 'websocket', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13' };

  it.each([
    ['a valid handshake', {}],
    ['Upgrade in another case', { upgrade: 'WebSocket' }],
    ['version 8', { 'sec-websocket-version': '8' }],
    ['one protocol', { 'sec-websocket-protocol': 'chat' }],
    ['protocols with spaces around the commas', { 'sec-websocket-protocol': 'a, b ,c' }],
  ])('%s passes', (_name, headers) => {
    expect(handshakeProblem({ ...ok, ...headers })).toBeNull();
  });

  it.each([
    ['no Upgrade', { upgrade: undefined }, 'upgrade'],
    ['Upgrade: h2c', { upgrade: 'h2c' }, 'upgrade'],
    ['no key', { 'sec-websocket-key': undefined }, 'sec-websocket-key'],
    ['a short key', { 'sec-websocket-key': 'abc' }, 'sec-websocket-key'],
    ['a key with a bad character', { 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ=!' }, 'sec-websocket-key'],
    ['no version', { 'sec-websocket-version': undefined }, 'sec-websocket-version'],
    ['version 12', { 'sec-websocket-version': '12' }, 'sec-websocket-version'],
    ['an empty protocol list', { 'sec-websocket-protocol': '' }, 'sec-websocket-protocol'],
    ['an empty member', { 'sec-websocket-protocol': 'a,,b' }, 'sec-websocket-protocol'],
    ['a duplicate', { 'sec-websocket-protocol': 'a, a' }, 'sec-websocket-protocol'],
    ['a space inside a name', { 'sec-websocket-protocol': 'a b' }, 'sec-websocket-protocol'],
    ['leading whitespace', { 'sec-websocket-protocol': ' a' }, 'sec-websocket-protocol'],
    ['trailing whitespace', { 'sec-websocket-protocol': 'a ' }, 'sec-websocket-protocol'],
    ['a separator character', { 'sec-websocket-protocol': 'a/b' }, 'sec-websocket-protocol'],
  ])('%s is refused naming %s', (_name, headers, param) => {
    expect(handshakeProblem({ ...ok, ...headers })?.param).toBe(param);
  });
});
