import { useEffect, useState } from 'preact/hooks';
import { api, apiPage } from '../api';
import { BarChart } from '../components/bar-chart';
import { ErrorNotice, Pager } from '../components/notice';
import { billedUnits, credits, dayToUnix, tokens, uncachedInput, usd, when } from '../format';
import type { DailyUsage, LogEntry, LogTotals } from '../types';

const PAGE_SIZE = 20;

/** The ledger's token sums by usage dimension: prompt_tokens and completion_tokens split into disjoint parts. */
function TokenTotals(props: { totals: LogTotals }) {
  const t = props.totals;
  const media = [t.image_input_tokens ? `${tokens(t.image_input_tokens)} image` : '', t.audio_input_tokens ? `${tokens(t.audio_input_tokens)} audio` : ''].filter(Boolean);
  return (
    <p class="totals" aria-label="tokens in all">
      Tokens: <strong>{tokens(uncachedInput(t))}</strong> input uncached{media.length ? ` (${media.join(', ')})` : ''},{' '}
      <strong>{tokens(t.cache_read_tokens)}</strong> cache read, <strong>{tokens(t.cache_write_tokens)}</strong> cache write
      {t.cache_write_1h_tokens ? ` (${tokens(t.cache_write_1h_tokens)} of them 1-hour)` : ''}, <strong>{tokens(t.completion_tokens)}</strong> output,
      of which <strong>{tokens(t.reasoning_tokens)}</strong> reasoning{t.audio_output_tokens ? ` and ${tokens(t.audio_output_tokens)} audio` : ''}
    </p>
  );
}

function initialFilters() {
  const q = new URLSearchParams(location.hash.split('?')[1] ?? '');
  return { token_name: q.get('token_name') ?? '', model_name: q.get('model_name') ?? '', from: '', to: '' };
}

export function UsagePage() {
  const [filters, setFilters] = useState(initialFilters);
  const [page, setPage] = useState(1);
  const [data, setData] = useState<{ items: LogEntry[]; total: number }>({ items: [], total: 0 });
  const [totals, setTotals] = useState<LogTotals | null>(null);
  const [daily, setDaily] = useState<DailyUsage[]>([]);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    const q = { token_name: filters.token_name, model_name: filters.model_name, start_timestamp: dayToUnix(filters.from), end_timestamp: dayToUnix(filters.to, true) };
    Promise.all([
      apiPage<LogEntry>('/api/log/', { ...q, p: page, page_size: PAGE_SIZE }),
      api<LogTotals>('GET', '/api/log/stat', { query: q }),
      api<DailyUsage[]>('GET', '/api/log/stat/daily', { query: q }),
    ])
      .then(([list, stat, days]) => {
        setData(list);
        setTotals(stat);
        setDaily(days);
        setError(null);
      })
      .catch((e: Error) => setError(e.message));
  }, [page, filters]);
  const set = (patch: Partial<ReturnType<typeof initialFilters>>) => {
    setPage(1);
    setFilters({ ...filters, ...patch });
  };

  const days = [...new Set(daily.map((d) => d.day))];
  const models = [...new Set(daily.map((d) => d.model))];
  const series = models.map((m) => ({ name: m, values: days.map((day) => daily.find((d) => d.day === day && d.model === m)?.quota ?? 0) }));
  const byModel = models.map((m) => ({ model: m, quota: daily.filter((d) => d.model === m).reduce((s, d) => s + d.quota, 0), count: daily.filter((d) => d.model === m).reduce((s, d) => s + d.count, 0) }));

  return (
    <section aria-labelledby="usage-title">
      <header class="page-head"><h1 id="usage-title">Usage</h1></header>
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <label>Key name <input name="token_name" value={filters.token_name} onInput={(e) => set({ token_name: e.currentTarget.value })} /></label>
        <label>Model <input name="model_name" value={filters.model_name} onInput={(e) => set({ model_name: e.currentTarget.value })} /></label>
        <label>From <input name="from" type="date" value={filters.from} onInput={(e) => set({ from: e.currentTarget.value })} /></label>
        <label>To <input name="to" type="date" value={filters.to} onInput={(e) => set({ to: e.currentTarget.value })} /></label>
      </form>
      <ErrorNotice error={error} />
      {totals ? (
        <p class="totals" aria-label="totals">
          <strong>{totals.count}</strong> billed calls, <strong>{credits(totals.quota)}</strong> credits ({usd(totals.quota)})
        </p>
      ) : null}
      {totals ? <TokenTotals totals={totals} /> : null}
      <BarChart title="Credits per day and model" labels={days} series={series} format={(n) => `${credits(n)} credits`} />
      <table class="compact" aria-label="credits per model">
        <thead><tr><th>Model</th><th>Calls</th><th>Credits</th></tr></thead>
        <tbody>{byModel.map((m) => <tr key={m.model}><td>{m.model}</td><td>{m.count}</td><td>{credits(m.quota)}</td></tr>)}</tbody>
      </table>
      <h2>Billed calls</h2>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th rowSpan={2} scope="col">Time</th><th rowSpan={2} scope="col">Key</th><th rowSpan={2} scope="col">Model</th>
              <th colSpan={3} scope="colgroup" class="group">Input tokens</th><th colSpan={2} scope="colgroup" class="group">Output tokens</th>
              <th rowSpan={2} scope="col">Units</th><th rowSpan={2} scope="col">Credits</th><th rowSpan={2} scope="col">Latency</th><th rowSpan={2} scope="col">Request</th>
            </tr>
            <tr><th scope="col">Uncached</th><th scope="col">Cache read</th><th scope="col">Cache write</th><th scope="col">All</th><th scope="col">Reasoning</th></tr>
          </thead>
          <tbody>
            {data.items.map((l) => (
              <tr key={l.id}>
                <td>{when(l.created_at)}</td>
                <td>{l.token_name}</td>
                <td>{l.model_name}</td>
                <td class="num">{tokens(uncachedInput(l))}</td>
                <td class="num">{tokens(l.cache_read_tokens)}</td>
                <td class="num">
                  {tokens(l.cache_write_tokens)}
                  {l.cache_write_1h_tokens ? <span class="hint"> ({tokens(l.cache_write_1h_tokens)} 1h)</span> : null}
                </td>
                <td class="num">{tokens(l.completion_tokens)}</td>
                <td class="num">{tokens(l.reasoning_tokens)}</td>
                <td class="num">{billedUnits(l.units, l.unit)}</td>
                <td>{credits(l.quota)}</td>
                <td>{l.use_time}s{l.is_stream ? ' (stream)' : ''}</td>
                <td><code>{l.request_id}</code></td>
              </tr>
            ))}
            {data.items.length === 0 ? <tr><td colSpan={12}>No billed calls match.</td></tr> : null}
          </tbody>
        </table>
      </div>
      <Pager page={page} pageSize={PAGE_SIZE} total={data.total} onPage={setPage} />
    </section>
  );
}
