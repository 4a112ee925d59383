import { useEffect, useState } from 'preact/hooks';
import { apiPage } from '../api';
import { ErrorNotice, Pager } from '../components/notice';
import { credits, dayToUnix, when } from '../format';
import type { TaskRecord } from '../types';

const PAGE_SIZE = 20;

export function TasksPage() {
  const [filters, setFilters] = useState({ status: '', model: '', family: '', from: '', to: '' });
  const [page, setPage] = useState(1);
  const [data, setData] = useState<{ items: TaskRecord[]; total: number }>({ items: [], total: 0 });
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    const { status, model, family, from, to } = filters;
    apiPage<TaskRecord>('/api/task/', { p: page, page_size: PAGE_SIZE, status, model, family, start_timestamp: dayToUnix(from), end_timestamp: dayToUnix(to, true) })
      .then((d) => {
        setData(d);
        setError(null);
      })
      .catch((e: Error) => setError(e.message));
  }, [page, filters]);
  const set = (patch: Partial<typeof filters>) => {
    setPage(1);
    setFilters({ ...filters, ...patch });
  };

  return (
    <section aria-labelledby="tasks-title">
      <header class="page-head"><h1 id="tasks-title">Tasks</h1></header>
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <label>
          Status
          <select name="status" value={filters.status} onChange={(e) => set({ status: e.currentTarget.value })}>
            <option value="">any</option>
            <option value="queued">queued</option>
            <option value="processing">processing</option>
            <option value="completed">completed</option>
            <option value="failed">failed</option>
          </select>
        </label>
        <label>
          Family
          <select name="family" value={filters.family} onChange={(e) => set({ family: e.currentTarget.value })}>
            <option value="">any</option>
            <option value="A">A (/v1/videos)</option>
            <option value="B">B (vendorA)</option>
            <option value="C">C (vendorB)</option>
          </select>
        </label>
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
