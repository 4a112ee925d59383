import { useState } from 'preact/hooks';
export function ErrorNotice(props: { error: string | null }) {
  return props.error ? <p class="error" role="alert">{props.error}</p> : null;
}

const count = (n: number) => n.toLocaleString('en');

/** First, previous, a page number to go to, next and last: a million keys are 100,000 pages. */
export function Pager(props: { page: number; pageSize: number; total: number; onPage: (p: number) => void }) {
  const pages = Math.max(1, Math.ceil(props.total / props.pageSize));
  const [draft, setDraft] = useState<string | null>(null);
  const go = () => {
    const wanted = Math.trunc(Number(draft));
    setDraft(null);
    if (Number.isFinite(wanted) && wanted >= 1) props.onPage(Math.min(pages, wanted));
  };
  return (
    <nav class="pager" aria-label="pages">
      <button type="button" disabled={props.page <= 1} onClick={() => props.onPage(1)}>First</button>
      <button type="button" disabled={props.page <= 1} onClick={() => props.onPage(props.page - 1)}>Previous</button>
      <label>
        Page{' '}
        <input class="page-number" aria-label="page number" type="number" min={1} max={pages} step={1} value={draft ?? String(props.page)}
          onInput={(e) => setDraft(e.currentTarget.value)} onBlur={() => draft !== null && go()}
          onKeyDown={(e) => { if (e.key === 'Enter') { e.preventDefault(); go(); } }} />
        {' '}of {count(pages)}
      </label>
      <span>({count(props.total)} in all)</span>
      <button type="button" disabled={props.page >= pages} onClick={() => props.onPage(props.page + 1)}>Next</button>
      <button type="button" disabled={props.page >= pages} onClick={() => props.onPage(pages)}>Last</button>
    </nav>
  );
}
