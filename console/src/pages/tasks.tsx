import { useState } from 'preact/hooks';
import { Choice } from '../components/choice';
import { ErrorNotice, Pager } from '../components/notice';
import { credits, dayToUnix, when } from '../format';
import type { TaskRecord } from '../types';
import { usePagedList } from '../use-paged-list';

const PAGE_SIZE = 20;

export function TasksPage() {
  const [filters, setFilters] = useState({ status: '', model: '', family: '', from: '', to: '' });
  const { status, model, family, from, to } = filters;
  const { page, setPage, data, error } = usePagedList<TaskRecord>(
    '/api/task/',
    { status, model, family, start_timestamp: dayToUnix(from), end_timestamp: dayToUnix(to, true) },
    PAGE_SIZE,
  );
  const set = (patch: Partial<typeof filters>) => {
    setPage(1);
    setFilters({ ...filters, ...patch });
  };

  return (
    <section aria-labelledby="tasks-title">
      <header class="page-head"><h1 id="tasks-title">Tasks</h1></header>
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <Choice label="Status" name="status" value={filters.status} onChange={(v) => set({ status: v })}
          options={[['queued', 'queued'], ['processing', 'processing'], ['completed', 'completed'], ['failed', 'failed']]} />
        <Choice label="Family" name="family" value={filters.family} onChange={(v) => set({ family: v })}
          options={[['A', 'A (/v1/videos)'], ['B', 'B (vendorA)'], ['C', 'C (vendorB)']]} />
        <label>Model <input name="model" value={filters.model} onInput={(e) => set({ model: e.currentTarget.value })} /></label>
        <label>From <input name="from" type="date" value={filters.from} onInput={(e) => set({ from: e.currentTarget.value })} /></label>
        <label>To <input name="to" type="date" value={filters.to} onInput={(e) => set({ to: e.currentTarget.value })} /></label>
      </form>
      <ErrorNotice error={error} />
      <div class="table-wrap">
        <table>
          <thead><tr><th>Task</th><th>Family</th><th>Model</th><th>Status</th><th>Progress</th><th>Billed</th><th>Created</th></tr></thead>
          <tbody>
            {data.items.map((t) => (
              <tr key={t.id}>
                <td><a href={`#/tasks/${encodeURIComponent(t.id)}`}>{t.id}</a></td>
                <td>{t.family}</td>
                <td>{t.model}</td>
                <td><span class={`badge ${t.status}`}>{t.status}</span>{t.error_code ? ` (${t.error_code})` : ''}</td>
                <td>{t.progress}%</td>
                <td>{t.billed === null ? '—' : credits(t.billed)}</td>
                <td>{when(t.created_at)}</td>
              </tr>
            ))}
            {data.items.length === 0 ? <tr><td colSpan={7}>No tasks match.</td></tr> : null}
          </tbody>
        </table>
      </div>
      <Pager page={page} pageSize={PAGE_SIZE} total={data.total} onPage={setPage} />
    </section>
  );
}
