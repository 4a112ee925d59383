import { useEffect, useState } from 'preact/hooks';
import { apiPage, type Page } from './api';

type Query = Record<string, string | number | boolean | undefined | null>;

/** One page of a list endpoint for the given filters, with its total; `reload` reads it again. */
export function usePagedList<T>(path: string, query: Query, pageSize: number) {
  const [page, setPage] = useState(1);
  const [data, setData] = useState<Page<T>>({ items: [], total: 0 });
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const filters = JSON.stringify(query);
  useEffect(() => {
    apiPage<T>(path, { ...query, p: page, page_size: pageSize }).then(
      (d) => {
        setData(d);
        setError(null);
      },
      (e: Error) => setError(e.message),
    );
  }, [path, filters, page, tick]);
  return { page, setPage, data, error, setError, reload: () => setTick((t) => t + 1) };
}
