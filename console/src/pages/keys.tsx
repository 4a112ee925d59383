import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { Choice } from '../components/choice';
import { CopyButton } from '../components/copy-button';
import { Dialog } from '../components/dialog';
import { ErrorNotice, Pager } from '../components/notice';
import { credits, KEY_STATUS, usd, when } from '../format';
import type { KeyLimits, TokenRecord } from '../types';
import { usePagedList } from '../use-paged-list';

const PAGE_SIZE = 20;

interface KeyForm {
  name: string;
  remain_quota: number;
  unlimited_quota: boolean;
  group: string;
  models: string;
  expired_time: number;
  rpm_limit: number;
  tpm_limit: number;
  max_concurrency: number;
  period_quota: number;
  quota_period: 'day' | 'week' | 'month' | null;
}

const EMPTY: KeyForm = {
  name: '', remain_quota: 500_000, unlimited_quota: false, group: '', models: '', expired_time: -1,
  rpm_limit: 0, tpm_limit: 0, max_concurrency: 0, period_quota: 0, quota_period: null,
};

const formOf = (t: TokenRecord): KeyForm => ({
  name: t.name, remain_quota: t.remain_quota, unlimited_quota: t.unlimited_quota, group: t.group, models: t.models, expired_time: t.expired_time,
  rpm_limit: t.rpm_limit, tpm_limit: t.tpm_limit, max_concurrency: t.max_concurrency, period_quota: t.period_quota, quota_period: t.quota_period,
});

/** The limits in force and this minute's use of them, over every replica; read when the editor opens. */
function LimitUse(props: { id: number }) {
  const [use, setUse] = useState<KeyLimits | null>(null);
  useEffect(() => {
    api<KeyLimits>('GET', `/api/token/${props.id}/limits`).then(setUse, () => setUse(null));
  }, [props.id]);
  if (!use) return null;
  const of = (n: number, limit: number) => (limit > 0 ? `${n.toLocaleString()} of ${limit.toLocaleString()}` : `${n.toLocaleString()} (no limit)`);
  return (
    <p class="limit-use" aria-label="rate limit use">
      This minute ({use.reset_seconds}s left): {of(use.minute_requests, use.rpm_limit)} requests, {of(use.minute_tokens, use.tpm_limit)} tokens; in flight now: {of(use.in_flight, use.max_concurrency)}
      {use.quota_period ? `; this ${use.quota_period}: ${credits(use.period_used)} of ${credits(use.period_quota)} credits` : ''}
    </p>
  );
}

function KeyFields(props: { form: KeyForm; onChange: (f: KeyForm) => void }) {
  const { form, onChange } = props;
  const set = (patch: Partial<KeyForm>) => onChange({ ...form, ...patch });
  return (
    <>
      <label>Name <input name="name" required maxLength={255} value={form.name} onInput={(e) => set({ name: e.currentTarget.value })} /></label>
      <label>
        Quota (credits, 500,000 = $1)
        <input name="remain_quota" type="number" min={0} step={1} value={form.remain_quota} disabled={form.unlimited_quota}
          onInput={(e) => set({ remain_quota: Number(e.currentTarget.value) })} />
      </label>
      <label class="inline">
        <input name="unlimited_quota" type="checkbox" checked={form.unlimited_quota} onChange={(e) => set({ unlimited_quota: e.currentTarget.checked })} /> Unlimited quota
      </label>
      <label>Group <input name="group" value={form.group} placeholder="default" onInput={(e) => set({ group: e.currentTarget.value })} /></label>
      <label>Models (comma-separated; empty = all) <input name="models" value={form.models} onInput={(e) => set({ models: e.currentTarget.value })} /></label>
      <label>
        Expires (Unix seconds, -1 = never)
        <input name="expired_time" type="number" value={form.expired_time} onInput={(e) => set({ expired_time: Number(e.currentTarget.value) })} />
      </label>
      <label>Requests per minute (0 = the group's default, else none) <input name="rpm_limit" type="number" min={0} step={1} value={form.rpm_limit} onInput={(e) => set({ rpm_limit: Number(e.currentTarget.value) })} /></label>
      <label>Tokens per minute (0 = the group's default, else none) <input name="tpm_limit" type="number" min={0} step={1} value={form.tpm_limit} onInput={(e) => set({ tpm_limit: Number(e.currentTarget.value) })} /></label>
      <label>Requests in flight (0 = the group's default, else none) <input name="max_concurrency" type="number" min={0} step={1} value={form.max_concurrency} onInput={(e) => set({ max_concurrency: Number(e.currentTarget.value) })} /></label>
      <label>Budget per period (credits; 0 = the group's default, else none) <input name="period_quota" type="number" min={0} step={1} value={form.period_quota} onInput={(e) => set({ period_quota: Number(e.currentTarget.value) })} /></label>
      <Choice label="Period" name="quota_period" empty="none" value={form.quota_period ?? ''} onChange={(v) => set({ quota_period: v === '' ? null : (v as KeyForm['quota_period']) })}
        options={[['day', 'day (UTC)'], ['week', 'week (from Monday, UTC)'], ['month', 'month (UTC)']]} />
    </>
  );
}

export function KeysPage() {
  const [filters, setFilters] = useState({ keyword: '', status: '', group: '' });
  const { page, setPage, data, error, setError, reload } = usePagedList<TokenRecord>('/api/token/', filters, PAGE_SIZE);
  const [creating, setCreating] = useState<KeyForm | null>(null);
  const [created, setCreated] = useState<TokenRecord | null>(null);
  const [editing, setEditing] = useState<{ record: TokenRecord; form: KeyForm } | null>(null);
  const [deleting, setDeleting] = useState<TokenRecord | null>(null);
  const run = (fn: () => Promise<void>) => fn().then(reload, (e: Error) => setError(e.message));

  const create = (e: Event) => {
    e.preventDefault();
    if (!creating) return;
    run(async () => {
      setCreated(await api<TokenRecord>('POST', '/api/token/', { body: creating }));
      setCreating(null);
    });
  };
  const save = (e: Event) => {
    e.preventDefault();
    if (!editing) return;
    // PUT /api/token/ replaces the whole object, as the API does for every client.
    run(async () => {
      await api('PUT', '/api/token/', { body: { ...editing.record, ...editing.form } });
      setEditing(null);
    });
  };
  const toggle = (t: TokenRecord) =>
    run(async () => {
      await api('PUT', '/api/token/', { query: { status_only: true }, body: { ...t, status: t.status === 1 ? 2 : 1 } });
    });
  const remove = () =>
    run(async () => {
      if (deleting) await api('DELETE', `/api/token/${deleting.id}`);
      setDeleting(null);
    });

  return (
    <section aria-labelledby="keys-title">
      <header class="page-head">
        <h1 id="keys-title">Keys</h1>
        <button type="button" class="primary" onClick={() => setCreating({ ...EMPTY })}>Create key</button>
      </header>
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <label>Search name <input name="keyword" type="search" value={filters.keyword} onInput={(e) => { setPage(1); setFilters({ ...filters, keyword: e.currentTarget.value }); }} /></label>
        <Choice label="Status" name="status" value={filters.status} onChange={(v) => { setPage(1); setFilters({ ...filters, status: v }); }}
          options={[['1', 'enabled'], ['2', 'disabled'], ['3', 'expired'], ['4', 'exhausted']]} />
        <label>Group <input name="group" value={filters.group} onInput={(e) => { setPage(1); setFilters({ ...filters, group: e.currentTarget.value }); }} /></label>
      </form>
      <ErrorNotice error={error} />
      <div class="table-wrap">
        <table>
          <thead>
            <tr><th>Name</th><th>Status</th><th>Group</th><th>Quota left</th><th>Used</th><th>Last used</th><th>Actions</th></tr>
          </thead>
          <tbody>
            {data.items.map((t) => (
              <tr key={t.id} data-key-id={t.id}>
                <td>{t.name}</td>
                <td><span class={`badge s${t.status}`}>{KEY_STATUS[t.status] ?? t.status}</span></td>
                <td>{t.group || 'default'}</td>
                <td>{t.unlimited_quota ? 'unlimited' : credits(t.remain_quota)}</td>
                <td title={`${credits(t.used_quota)} credits`}>{usd(t.used_quota)}</td>
                <td>{when(t.accessed_time)}</td>
                <td class="actions">
                  <button type="button" onClick={() => setEditing({ record: t, form: formOf(t) })}>Edit</button>
                  <button type="button" onClick={() => toggle(t)}>{t.status === 1 ? 'Disable' : 'Enable'}</button>
                  <a href={`#/usage?token_name=${encodeURIComponent(t.name)}`}>Usage</a>
                  <button type="button" class="danger" onClick={() => setDeleting(t)}>Delete</button>
                </td>
              </tr>
            ))}
            {data.items.length === 0 ? <tr><td colSpan={7}>No keys match.</td></tr> : null}
          </tbody>
        </table>
      </div>
      <Pager page={page} pageSize={PAGE_SIZE} total={data.total} onPage={setPage} />

      <Dialog title="Create key" open={creating !== null} onClose={() => setCreating(null)}>
        {creating ? (
          <form onSubmit={create}>
            <KeyFields form={creating} onChange={setCreating} />
            <div class="buttons"><button type="submit" class="primary">Create</button><button type="button" onClick={() => setCreating(null)}>Cancel</button></div>
          </form>
        ) : null}
      </Dialog>

      <Dialog title="Your new key" open={created !== null} onClose={() => setCreated(null)}>
        {created ? (
          <div>
            <p>Copy it now: the full key is shown only this once.</p>
            <p><code id="new-key-value" class="secret">sk-{created.key}</code></p>
            <div class="buttons"><CopyButton text={`sk-${created.key}`} /><button type="button" onClick={() => setCreated(null)}>Done</button></div>
          </div>
        ) : null}
      </Dialog>

      <Dialog title="Edit key" open={editing !== null} onClose={() => setEditing(null)}>
        {editing ? (
          <form onSubmit={save}>
            <LimitUse id={editing.record.id} />
            <KeyFields form={editing.form} onChange={(form) => setEditing({ ...editing, form })} />
            <div class="buttons"><button type="submit" class="primary">Save</button><button type="button" onClick={() => setEditing(null)}>Cancel</button></div>
          </form>
        ) : null}
      </Dialog>

      <Dialog title="Delete key" open={deleting !== null} onClose={() => setDeleting(null)}>
        {deleting ? (
          <div>
            <p>Delete key <strong>{deleting.name}</strong>? Calls with it stop at once. This cannot be undone.</p>
            <div class="buttons"><button type="button" class="danger" onClick={remove}>Delete</button><button type="button" onClick={() => setDeleting(null)}>Cancel</button></div>
          </div>
        ) : null}
      </Dialog>
    </section>
  );
}
