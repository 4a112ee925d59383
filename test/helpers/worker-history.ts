import type { Client } from '@temporalio/client';

type History = Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>;

/** Every run of a workflow id, oldest first, following continue-as-new back from the latest run. */
export async function fetchAllRuns(client: Client, workflowId: string): Promise<Array<{ runId: string; history: History }>> {
  const latest = await client.workflow.getHandle(workflowId).describe();
  const runs: Array<{ runId: string; history: History }> = [];
  let runId: string | undefined = latest.runId;
  while (runId) {
    const history: History = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    runs.unshift({ runId, history });
    const previous: string | null | undefined = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    runId = previous || undefined;
  }
  return runs;
}

/**
 * All text a history carries: every byte array (payload data, metadata, failure details) decoded as
 * UTF-8, and every string field (ids, names, failure messages).
 */
export function historyTexts(history: History): string[] {
  const out: string[] = [];
  const seen = new Set<unknown>();
  const walk = (v: unknown) => {
    if (typeof v === 'string') {
      out.push(v);
      return;
    }
    if (v == null || typeof v !== 'object' || seen.has(v)) return;
    seen.add(v);
    if (v instanceof Uint8Array) {
      out.push(Buffer.from(v).toString('utf8'));
      return;
    }
    for (const child of Object.values(v as Record<string, unknown>)) walk(child);
  };
  walk(history);
  return out;
}
