export function ErrorNotice(props: { error: string | null }) {
  return props.error ? <p class="error" role="alert">{props.error}</p> : null;
}

export function Pager(props: { page: number; pageSize: number; total: number; onPage: (p: number) => void }) {
  const pages = Math.max(1, Math.ceil(props.total / props.pageSize));
  return (
    <nav class="pager" aria-label="pages">
      <button type="button" disabled={props.page <= 1} onClick={() => props.onPage(props.page - 1)}>Previous</button>
      <span>Page {props.page} of {pages} ({props.total} in all)</span>
      <button type="button" disabled={props.page >= pages} onClick={() => props.onPage(props.page + 1)}>Next</button>
    </nav>
  );
}
