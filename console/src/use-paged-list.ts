import { useEffect, useRef, useState } from 'preact/hooks';
import { apiPage, type Page } from './api';

type Query = Record<string, string | number | boolean | undefined | null>;

/** How long typing in a filter must pause before the list is read again. */
const FILTER_PAUSE_MS = 250;

/**
 * One page of a list endpoint for the given filters, with its total; `reload` reads it again. A change of filters
 * is read once typing pauses, and only the answer to the latest read is shown (an earlier, slower search never
 * overwrites a later one).
 */
export function usePagedList<T>(path: string, query: Query, pageSize: number) {
  const [page, setPage] = useState(1);
  const [data, setData] = useState<Page<T>>({ items: [], total: 0 });
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const filters = JSON.stringify(query);
  const lastFilters = useRef(filters);
  useEffect(() => {
    let current = true;
    const pause = filters === lastFilters.current ? 0 : FILTER_PAUSE_MS;
    lastFilters.current = filters;
    const timer = setTimeout(() => {
      apiPage<T>(path, { ...query, p: page, page_size: pageSize }).then(
        (d) => {
          if (!current) return;
          setData(d);
          setError(null);
        },
        (e: Error) => {
          if (current) setError(e.message);
        },
      );
    }, pause);
    return () => {
      current = false;
      clearTimeout(timer);
    };
  }, [path, filters, page, tick]);
  return { page, setPage, data, error, setError, reload: () => setTick((t) => t + 1) };
}
