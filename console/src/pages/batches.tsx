import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { Choice } from '../components/choice';
import { ErrorNotice, Pager } from '../components/notice';
import { when } from '../format';
import type { InferenceBatchRecord } from '../types';
import { usePagedList } from '../use-paged-list';

const PAGE_SIZE = 20;
const ENDED = ['completed', 'failed', 'expired', 'cancelled'];

const done = (b: InferenceBatchRecord) => b.succeeded + b.failed + b.canceled + b.expired;

/** Inference batches of both APIs: progress, counts, cancel, the output and error files. */
export function BatchesPage() {
  const [status, setStatus] = useState('');
  const { page, setPage, data, error, setError, reload } = usePagedList<InferenceBatchRecord>('/api/batches/', { status }, PAGE_SIZE);
  const running = data.items.some((b) => !ENDED.includes(b.status));
  useEffect(() => {
    if (!running) return;
    const t = setTimeout(reload, 1000);
    return () => clearTimeout(t);
  }, [running, data]);

  const cancel = (b: InferenceBatchRecord) => api('POST', `/api/batches/${encodeURIComponent(b.id)}/cancel`).then(reload, (e: Error) => setError(e.message));
  // The gateway streams the file; the session cookie authorizes it.
  const download = (b: InferenceBatchRecord, kind: 'output' | 'errors') => {
    const a = document.createElement('a');
    a.href = `/api/batches/${encodeURIComponent(b.id)}/files/${kind}`;
    a.download = `${b.id}-${kind}.jsonl`;
    a.click();
  };

  return (
    <section aria-labelledby="batches-title">
      <header class="page-head"><h1 id="batches-title">Batches</h1></header>
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <Choice label="Status" name="status" value={status} onChange={(v) => { setPage(1); setStatus(v); }}
          options={['validating', 'in_progress', 'finalizing', 'completed', 'failed', 'expired', 'cancelling', 'cancelled'].map((s) => [s, s])} />
      </form>
      <ErrorNotice error={error} />
      <div class="table-wrap">
        <table>
          <thead><tr><th>Batch</th><th>API</th><th>Endpoint</th><th>Status</th><th>Progress</th><th>Succeeded / failed</th><th>Tokens in / out</th><th>Created</th><th>Actions</th></tr></thead>
          <tbody>
            {data.items.map((b) => {
              const pct = b.total ? Math.floor((100 * done(b)) / b.total) : 0;
              return (
                <tr key={b.id} data-batch-id={b.id}>
                  <td>{b.id}</td>
                  <td>{b.api === 'openai' ? 'OpenAI' : 'Anthropic'}</td>
                  <td>{b.endpoint}</td>
                  <td><span class={`badge ${b.status}`}>{b.status}</span></td>
                  <td>
                    <div class="progress">
                      <progress max={100} value={pct} aria-label={`batch ${b.id} progress`} />
                      <span class="pct">{done(b)}/{b.total}</span>
                    </div>
                  </td>
                  <td>{b.succeeded} / {b.failed + b.canceled + b.expired}</td>
                  <td>{b.input_tokens} / {b.output_tokens}</td>
                  <td>{when(b.created_at)}</td>
                  <td class="actions">
                    {['validating', 'in_progress'].includes(b.status) ? <button type="button" onClick={() => cancel(b)}>Cancel</button> : null}
                    {b.has_output ? <button type="button" onClick={() => download(b, 'output')}>Output</button> : null}
                    {b.has_errors ? <button type="button" onClick={() => download(b, 'errors')}>Errors</button> : null}
                  </td>
                </tr>
              );
            })}
            {data.items.length === 0 ? <tr><td colSpan={9}>No batches yet.</td></tr> : null}
          </tbody>
        </table>
      </div>
      <Pager page={page} pageSize={PAGE_SIZE} total={data.total} onPage={setPage} />
    </section>
  );
}
