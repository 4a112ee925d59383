import { showsBalances } from '../../src/api/routes/management';

/**
 * Which management routes wait for this process's billing (credit leases given back, settles committed) before they
 * answer: those that show balances or the ledger. A rollout's progress, the audit log and channel health do not, so a
 * console polling them leaves the credit leases of the calls in flight alone.
 */
describe('management routes that show balances', () => {
  it.each([
    '/api/token/',
    '/api/token/:id',
    '/api/token/:id/limits',
    '/api/token/batch/:id/keys',
    '/api/token/batch/:id/keys.csv',
    '/api/token/batch/:id/keys.jsonl',
    '/api/log/',
    '/api/log/stat',
    '/api/user/token',
    '/api/task/:id',
  ])('%s waits for the billing', (route) => expect(showsBalances(route)).toBe(true));

  it.each(['/api/token/batch', '/api/token/batch/:id', '/api/token/batch/:id/rotate', '/api/audit/', '/api/channel/', '/api/video/retention'])(
    '%s does not',
    (route) => expect(showsBalances(route)).toBe(false),
  );
});
