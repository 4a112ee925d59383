/** The innermost message of a workflow-side failure (an ActivityFailure wraps the activity's own error). */
export function failureMessage(err: unknown): string {
  let e = err as { message?: string; cause?: unknown } | undefined;
  while (e && typeof e === 'object' && e.cause && typeof e.cause === 'object') e = e.cause as typeof e;
  return (e && typeof e.message === 'string' && e.message) || String(err);
}
