import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorNotice, Pager } from '../components/notice';
import { when } from '../format';
import type { BatchRecord } from '../types';
import { usePagedList } from '../use-paged-list';

const PAGE_SIZE = 10;

/** How far a batch is, 0..100. */
export function batchPercent(b: BatchRecord): number {
  if (b.status === 'completed') return 100;
  if (b.requested === 0) return 0;
  const done = b.kind === 'issue' ? b.created : b.kind === 'status' ? b.processed : (b.created + b.processed) / 2;
  return Math.min(100, Math.floor((done / b.requested) * 100));
}

type Kind = 'issue' | 'status' | 'rotate';

function Progress(props: { batch: BatchRecord }) {
  const pct = batchPercent(props.batch);
  return (
    <div class="progress">
      <progress max={100} value={pct} aria-label={`batch ${props.batch.id} progress`} />
      <span class="pct">{pct}%</span>
    </div>
  );
}

const downloadedKey = (id: number) => `gw-console-downloaded-${id}`;

export function RolloutsPage() {
  const { page, setPage, data, error, setError, reload } = usePagedList<BatchRecord>('/api/token/batch', {}, PAGE_SIZE);
  const [kind, setKind] = useState<Kind>('issue');
  const [form, setForm] = useState({ count: 100, name: 'rollout', remain_quota: 500_000, unlimited_quota: false, group: '', source: '', status: '2', grace_seconds: 3600 });

  // While a batch runs, its progress is read again every second.
  const running = data.items.some((b) => b.status === 'running');
  useEffect(() => {
    if (!running) return;
    const t = setTimeout(reload, 1000);
    return () => clearTimeout(t);
  }, [running, data]);

  const start = async (e: Event) => {
    e.preventDefault();
    try {
      const source = Number(form.source);
      if (kind === 'issue') {
        await api('POST', '/api/token/batch', {
          body: { count: form.count, name: form.name, remain_quota: form.remain_quota, unlimited_quota: form.unlimited_quota, group: form.group },
        });
      } else if (kind === 'status') {
        await api('PUT', `/api/token/batch/${source}`, { query: { status_only: true }, body: { status: Number(form.status) } });
      } else {
        await api('POST', `/api/token/batch/${source}/rotate`, { body: { grace_seconds: form.grace_seconds } });
      }
      setPage(1);
      reload();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const cancel = (b: BatchRecord) => api('DELETE', `/api/token/batch/${b.id}`).then(reload, (e: Error) => setError(e.message));
  // The gateway streams the file (a million keys are never in this page's memory); the session cookie authorizes it.
  const download = (b: BatchRecord) => {
    const a = document.createElement('a');
    a.href = `/api/token/batch/${b.id}/keys.csv`;
    a.download = `batch-${b.id}-keys.csv`;
    a.click();
    sessionStorage.setItem(downloadedKey(b.id), '1');
    reload();
  };
  const set = (patch: Partial<typeof form>) => setForm({ ...form, ...patch });

  return (
    <section aria-labelledby="rollouts-title">
      <header class="page-head"><h1 id="rollouts-title">Rollouts</h1></header>
      <form class="card" onSubmit={start} aria-label="start a rollout">
        <fieldset>
          <legend>Start a rollout</legend>
          <label>
            Kind
            <select name="kind" value={kind} onChange={(e) => setKind(e.currentTarget.value as Kind)}>
              <option value="issue">Issue new keys</option>
              <option value="status">Change the status of a batch's keys</option>
              <option value="rotate">Rotate a batch's keys</option>
            </select>
          </label>
          {kind === 'issue' ? (
            <>
              <label>Count <input name="count" type="number" min={1} max={1000000} value={form.count} onInput={(e) => set({ count: Number(e.currentTarget.value) })} /></label>
              <label>Name prefix <input name="prefix" value={form.name} onInput={(e) => set({ name: e.currentTarget.value })} /></label>
              <label>Quota per key (credits) <input name="quota" type="number" min={0} value={form.remain_quota} onInput={(e) => set({ remain_quota: Number(e.currentTarget.value) })} /></label>
              <label class="inline"><input type="checkbox" checked={form.unlimited_quota} onChange={(e) => set({ unlimited_quota: e.currentTarget.checked })} /> Unlimited quota</label>
              <label>Group <input name="group" value={form.group} placeholder="default" onInput={(e) => set({ group: e.currentTarget.value })} /></label>
            </>
          ) : (
            <label>Source batch id <input name="source" type="number" min={1} required value={form.source} onInput={(e) => set({ source: e.currentTarget.value })} /></label>
          )}
          {kind === 'status' ? (
            <label>
              New status
              <select name="new-status" value={form.status} onChange={(e) => set({ status: e.currentTarget.value })}>
                <option value="2">disabled</option>
                <option value="1">enabled</option>
              </select>
            </label>
          ) : null}
          {kind === 'rotate' ? (
            <label>Grace seconds (old keys keep working) <input name="grace" type="number" min={0} value={form.grace_seconds} onInput={(e) => set({ grace_seconds: Number(e.currentTarget.value) })} /></label>
          ) : null}
          <button type="submit" class="primary">Start</button>
        </fieldset>
      </form>
      <ErrorNotice error={error} />
      <div class="table-wrap">
        <table>
          <thead><tr><th>Batch</th><th>Kind</th><th>Status</th><th>Progress</th><th>Started</th><th>Note</th><th>Actions</th></tr></thead>
          <tbody>
            {data.items.map((b) => (
              <tr key={b.id} data-batch-id={b.id}>
                <td>#{b.id}</td>
                <td>{b.kind}{b.source_batch_id ? ` of #${b.source_batch_id}` : ''}</td>
                <td><span class={`badge ${b.status}`}>{b.status}</span>{b.phase && b.status === 'running' ? ` (${b.phase})` : ''}</td>
                <td><Progress batch={b} /> {b.kind === 'issue' ? `${b.created}/${b.requested} issued` : `${b.processed}/${b.requested}`}</td>
                <td>{when(b.started_time)}</td>
                <td>{b.error ?? b.note ?? ''}</td>
                <td class="actions">
                  {b.status === 'running' ? <button type="button" onClick={() => cancel(b)}>Cancel</button> : null}
                  {b.kind !== 'status' && b.created > 0 && b.status !== 'running'
                    ? sessionStorage.getItem(downloadedKey(b.id))
                      ? <span>Keys downloaded</span>
                      : <button type="button" onClick={() => download(b)}>Download keys</button>
                    : null}
                </td>
              </tr>
            ))}
            {data.items.length === 0 ? <tr><td colSpan={7}>No rollouts yet.</td></tr> : null}
          </tbody>
        </table>
      </div>
      <Pager page={page} pageSize={PAGE_SIZE} total={data.total} onPage={setPage} />
    </section>
  );
}
