import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorNotice } from '../components/notice';
import { credits, when } from '../format';
import { type ExportedHistory, timelineOf, type TimelineStep } from '../timeline';
import type { TaskRecord, WebhookAttempt } from '../types';

interface ReplayResult {
  deterministic: boolean;
  runs: Array<{ run: number; ok: boolean; non_deterministic: boolean; error: string | null }>;
}

export function TaskPage(props: { id: string }) {
  const [task, setTask] = useState<TaskRecord | null>(null);
  const [steps, setSteps] = useState<TimelineStep[]>([]);
  const [hooks, setHooks] = useState<WebhookAttempt[]>([]);
  const [replay, setReplay] = useState<ReplayResult | 'running' | null>(null);
  const [error, setError] = useState<string | null>(null);
  const path = `/api/task/${encodeURIComponent(props.id)}`;

  useEffect(() => {
    Promise.all([api<TaskRecord>('GET', path), api<ExportedHistory>('GET', `${path}/history`), api<WebhookAttempt[]>('GET', `${path}/webhooks`)])
      .then(([t, h, w]) => {
        setTask(t);
        setSteps(timelineOf(h));
        setHooks(w);
      })
      .catch((e: Error) => setError(e.message));
  }, [props.id]);

  const runReplay = () => {
    setReplay('running');
    api<ReplayResult>('POST', `${path}/replay`).then(setReplay, (e: Error) => {
      setReplay(null);
      setError(e.message);
    });
  };

  return (
    <section aria-labelledby="task-title">
      <header class="page-head">
        <h1 id="task-title">Task {props.id}</h1>
        <a href="#/tasks">All tasks</a>
      </header>
      <ErrorNotice error={error} />
      {task ? (
        <dl class="facts">
          <dt>Family</dt><dd>{task.family}</dd>
          <dt>Model</dt><dd>{task.model}</dd>
          <dt>Status</dt><dd><span class={`badge ${task.status}`}>{task.status}</span>{task.error_code ? ` ${task.error_code}: ${task.error_message ?? ''}` : ''}</dd>
          <dt>Held</dt><dd>{credits(task.quota)} credits</dd>
          <dt>Billed</dt><dd>{task.billed === null ? 'nothing' : `${credits(task.billed)} credits`}</dd>
          <dt>Key</dt><dd>{task.token_name}</dd>
          <dt>Workflow</dt><dd><code>{task.workflow_id}</code></dd>
          <dt>Created</dt><dd>{when(task.created_at)}</dd>
          <dt>Finished</dt><dd>{when(task.finished_at)}</dd>
        </dl>
      ) : null}
      <div class="page-head">
        <h2>Timeline</h2>
        <button type="button" onClick={runReplay} disabled={replay === 'running'}>Replay</button>
      </div>
      {replay && replay !== 'running' ? (
        <p role="status" class={replay.deterministic ? 'ok' : 'error'}>
          {replay.deterministic
            ? `Deterministic: ${replay.runs.length} run(s) replayed against the running code.`
            : `Not deterministic: ${replay.runs.filter((r) => !r.ok).map((r) => `run ${r.run}: ${r.error ?? 'failed'}`).join('; ')}`}
        </p>
      ) : replay === 'running' ? <p role="status">Replaying…</p> : null}
      <ol class="timeline" aria-label="workflow timeline">
        {steps.map((s, i) => (
          <li key={i} class={`step ${s.kind}`}>
            <time dateTime={s.at}>{s.at.replace('T', ' ').slice(0, 23)}</time>
            <span class="title">{s.title}</span>
            {s.detail ? <span class="detail">{s.detail}</span> : null}
          </li>
        ))}
        {hooks.map((h) => (
          <li key={`hook-${h.attempt}`} class={`step webhook ${h.delivered ? 'ok' : 'failed'}`}>
            <time dateTime={new Date(h.created_at * 1000).toISOString()}>{when(h.created_at)}</time>
            <span class="title">Webhook attempt {h.attempt}: {h.delivered ? 'delivered' : 'failed'}{h.status ? ` (HTTP ${h.status})` : ''}</span>
            {h.error ? <span class="detail">{h.error}</span> : null}
          </li>
        ))}
      </ol>
    </section>
  );
}
