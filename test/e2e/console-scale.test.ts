/// <reference lib="dom" />
// page.evaluate() callbacks run in the browser.
import type { Browser, Page, Request as BrowserRequest } from 'playwright-core';
import { KeyCipher } from '../../src/domain/keys/key-material';
import { newAccount, startGateway, startWorker, TEST_SECRET, type TestGateway } from '../helpers/harness';
import { waitFor } from '../helpers/wait';
import { collectErrors, launchChromium, screenshot } from './console-browser';

const KEYS = 1_000_000;

/**
 * The console's key list, search, paging and bulk status change on an account with a million keys, in headless
 * Chromium, on a PostgreSQL database of the test's own (the keys are one issue batch, written straight into the
 * table as keys-scale in bench/ writes them). Each step's time in the browser is printed; the API's latency at
 * this size is the keys-scale benchmark's measure.
 */
describe('web console with a million keys on one account', () => {
  let gw: TestGateway;
  let worker: Awaited<ReturnType<typeof startWorker>>;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  let batchId: number;
  const timings: Array<[string, number]> = [];

  async function timed<T>(label: string, step: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    const out = await step();
    timings.push([label, Math.round(performance.now() - t0)]);
    return out;
  }

  beforeAll(async () => {
    gw = await startGateway({ scratchDatabase: true });
    worker = await startWorker(gw);
    const acct = await newAccount(gw.db);
    const batch = await gw.db.query<{ id: number }>(
      `INSERT INTO key_batches (account_id, kind, status, requested, created, params, phase, finished_at)
       VALUES ($1, 'issue', 'completed', $2, $2, $3, 'done', now()) RETURNING id`,
      [acct.id, KEYS, JSON.stringify({ name: 'scale', remain_quota: 500_000, unlimited_quota: false, group: '', models: '', expired_time: -1, index_end: KEYS })],
    );
    batchId = batch.rows[0].id;
    // One ciphertext shared by every row (each decrypts to a key); the hashes are distinct, as the index needs.
    const blob = new KeyCipher(TEST_SECRET).encrypt('C'.repeat(48));
    const t0 = performance.now();
    await gw.db.query(
      `INSERT INTO tokens (user_id, key_hash, key_cipher, name, "group", status, remain_quota, created_time, batch_id, batch_index)
       SELECT $1::bigint, sha256(('console-scale:' || g)::bytea), $2, 'scale-' || CASE WHEN g < 100000 THEN lpad(g::text, 5, '0') ELSE g::text END,
         CASE WHEN g % 10 = 0 THEN 'vip' ELSE '' END, CASE WHEN g % 50 = 0 THEN 2 ELSE 1 END, 500000, 1, $3::bigint, g
       FROM generate_series(1, $4::int) g`,
      [acct.id, blob, batchId, KEYS],
    );
    await gw.db.query('VACUUM ANALYZE tokens');
    process.stdout.write(`[console-scale] ${KEYS.toLocaleString('en')} keys written in ${Math.round(performance.now() - t0)} ms\n`);

    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    page.setDefaultTimeout(20_000);
    errors = collectErrors(page);
    await page.goto(`${gw.baseUrl}/console`);
    await page.getByLabel('Username').fill(acct.username);
    await page.getByLabel('Password', { exact: true }).fill(acct.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }, 300_000);

  afterAll(async () => {
    process.stdout.write(`[console-scale] ${timings.map(([l, ms]) => `${l}: ${ms} ms`).join('; ')}\n`);
    await browser?.close();
    await worker?.stop();
    await gw?.close();
  }, 60_000);

  afterEach(() => {
    expect(errors.splice(0)).toEqual([]);
  });

  const pager = () => page.getByRole('navigation', { name: 'pages' });
  const rows = () => page.locator('tbody tr');

  it('the key list opens on the newest keys with the exact total; First, Last and a typed page number move through 50,000 pages', async () => {
    await timed('first page', async () => {
      await page.getByRole('heading', { name: 'Keys' }).waitFor();
      await pager().getByText('(1,000,000 in all)').waitFor();
    });
    await rows().filter({ hasText: 'scale-1000000' }).waitFor();
    await pager().getByText('of 50,000').waitFor();
    await timed('last page', async () => {
      await pager().getByRole('button', { name: 'Last' }).click();
      await rows().last().filter({ hasText: 'scale-00001' }).waitFor();
    });
    expect(await pager().getByLabel('page number').inputValue()).toBe('50000');
    await timed('page 25,000 typed', async () => {
      await pager().getByLabel('page number').fill('25000');
      await pager().getByLabel('page number').press('Enter');
      await rows().first().filter({ hasText: 'scale-500020' }).waitFor();
    });
    await pager().getByRole('button', { name: 'First' }).click();
    await rows().filter({ hasText: 'scale-1000000' }).waitFor();
    await screenshot(page, 'scale-01-keys');
  });

  it('a name search typed key by key shows the one match, never an earlier, slower answer', async () => {
    // The reads of the key list the typing starts, until each is answered.
    const reads = new Set<BrowserRequest>();
    const started = (r: BrowserRequest) => {
      if (new URL(r.url()).pathname === '/api/token/') reads.add(r);
    };
    const ended = (r: BrowserRequest) => void reads.delete(r);
    page.on('request', started);
    page.on('requestfinished', ended);
    page.on('requestfailed', ended);
    try {
      await timed('name search', async () => {
        await page.getByLabel('Search name').pressSequentially('scale-777777', { delay: 30 });
        await pager().getByText('(1 in all)').waitFor();
      });
      expect(await rows().count()).toBe(1);
      expect(await rows().first().locator('td').first().textContent()).toBe('scale-777777');
      // Every read answered (and two frames later on screen, if it were to be shown): the answer shown is still
      // the last one asked for.
      await waitFor(() => reads.size === 0, { timeoutMs: 20_000, message: 'every read of the key list the search started' });
      await page.evaluate(() => new Promise<void>((r) => requestAnimationFrame(() => requestAnimationFrame(() => r()))));
      expect(await rows().count()).toBe(1);
    } finally {
      page.off('request', started);
      page.off('requestfinished', ended);
      page.off('requestfailed', ended);
    }
    await page.getByLabel('Search name').fill('');
    await pager().getByText('(1,000,000 in all)').waitFor();
  });

  it('the status and group filters show their exact counts', async () => {
    await timed('status filter', async () => {
      await page.getByLabel('Status').selectOption('2');
      await pager().getByText('(20,000 in all)').waitFor();
    });
    await page.getByLabel('Status').selectOption('');
    await timed('group filter', async () => {
      await page.getByLabel('Group').fill('vip');
      await pager().getByText('(100,000 in all)').waitFor();
    });
    await page.getByLabel('Group').fill('');
    await pager().getByText('(1,000,000 in all)').waitFor();
  });

  it('disabling one key and re-enabling it from its row', async () => {
    const first = rows().filter({ hasText: 'scale-999999' });
    await timed('disable one key', async () => {
      await first.getByRole('button', { name: 'Disable' }).click();
      await first.getByRole('button', { name: 'Enable' }).waitFor();
    });
    await first.getByRole('button', { name: 'Enable' }).click();
    await first.getByRole('button', { name: 'Disable' }).waitFor();
  });

  it('a bulk status change of the whole million from Rollouts: progress shows while the key list stays usable; cancelled, the counts stay exact', async () => {
    await page.getByRole('link', { name: 'Rollouts' }).click();
    await page.getByRole('heading', { name: 'Rollouts' }).waitFor();
    await page.getByLabel('Kind').selectOption('status');
    await page.getByLabel('Source batch id').fill(String(batchId));
    await page.getByLabel('New status').selectOption('2');
    await page.getByRole('button', { name: 'Start' }).click();
    const running = rows().filter({ hasText: `status of #${batchId}` });
    await running.waitFor();
    await timed('bulk change: first progress', () =>
      page.waitForFunction(() => ((document.querySelector('tbody tr progress') as HTMLProgressElement | null)?.value ?? 0) > 0, null, { timeout: 60_000 }));
    await screenshot(page, 'scale-02-bulk-status');

    // While it runs, the key list and its search answer.
    await page.getByRole('link', { name: 'Keys' }).click();
    await timed('name search during the bulk change', async () => {
      await page.getByLabel('Search name').fill('scale-123456');
      await pager().getByText('(1 in all)').waitFor();
    });
    await page.getByLabel('Search name').fill('');

    // A full run takes about a minute here; cancelled part-way, what it changed so far is counted exactly.
    await page.getByRole('link', { name: 'Rollouts' }).click();
    await running.getByRole('button', { name: 'Cancel' }).click();
    await running.locator('.badge', { hasText: 'cancelled' }).waitFor({ timeout: 60_000 });
    const truth = await gw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM tokens WHERE batch_id = $1 AND status = 2', [batchId]);
    expect(truth.rows[0].n).toBeGreaterThan(20_000);
    await page.getByRole('link', { name: 'Keys' }).click();
    await page.getByLabel('Status').selectOption('2');
    await pager().getByText(`(${truth.rows[0].n.toLocaleString('en')} in all)`).waitFor();
  }, 180_000);
});
