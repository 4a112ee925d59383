/**
 * Runs `fn` over `items` cut into chunks of `size`, at most `parallel` chunks at a time, and returns the results in
 * the items' order: for the cloud embedding APIs that take one text (or a few) per call.
 */
export async function mapInChunks<T, R>(items: readonly T[], size: number, parallel: number, fn: (chunk: T[]) => Promise<R[]>): Promise<R[]> {
  const chunks: T[][] = [];
  for (let at = 0; at < items.length; at += size) chunks.push(items.slice(at, at + size));
  const results: R[][] = new Array(chunks.length);
  let next = 0;
  const worker = async () => {
    while (next < chunks.length) {
      const i = next++;
      results[i] = await fn(chunks[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, chunks.length) }, worker));
  return results.flat();
}
