import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorNotice } from '../components/notice';
import type { ChannelRecord } from '../types';

function health(c: ChannelRecord): { label: string; cls: string } {
  if (c.cooling_until) return { label: `cooling down until ${new Date(c.cooling_until).toISOString().slice(11, 19)}`, cls: 'failed' };
  if (c.success_rate === null) return { label: 'no traffic yet', cls: 'queued' };
  if (c.success_rate >= 0.95) return { label: 'healthy', cls: 'completed' };
  return { label: 'degraded', cls: 'processing' };
}

export function ChannelsPage() {
  const [channels, setChannels] = useState<ChannelRecord[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    api<ChannelRecord[]>('GET', '/api/channel/').then(setChannels, (e: Error) => setError(e.message));
    const t = setTimeout(() => setTick((n) => n + 1), 5000);
    return () => clearTimeout(t);
  }, [tick]);
  return (
    <section aria-labelledby="channels-title">
      <header class="page-head"><h1 id="channels-title">Channels</h1></header>
      <p class="hint">Chat, embeddings and image channels: the last 100 attempts of the process that answered. Video channels: tasks finished in the last 24 hours.</p>
      <ErrorNotice error={error} />
      <div class="table-wrap">
        <table>
          <thead><tr><th>Channel</th><th>Type</th><th>Health</th><th>Success</th><th>Attempts</th><th>Latency p50 / p95</th><th>Failures in a row</th><th>Models</th></tr></thead>
          <tbody>
            {channels.map((c) => {
              const h = health(c);
              return (
                <tr key={c.name}>
                  <td>{c.name}</td>
                  <td>{c.type}</td>
                  <td><span class={`badge ${h.cls}`}>{h.label}</span></td>
                  <td>{c.success_rate === null ? '—' : `${Math.round(c.success_rate * 1000) / 10}%`}</td>
                  <td>{c.attempts}</td>
                  <td>{c.latency_ms_p50 === null ? '—' : `${c.latency_ms_p50} / ${c.latency_ms_p95} ms`}</td>
                  <td>{c.consecutive_failures}</td>
                  <td class="models">{c.models.join(', ')}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </section>
  );
}
