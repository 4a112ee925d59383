/** Stacked bars (one per label, one colour per series) drawn as SVG, with a legend and a table fallback. */
export interface BarSeries {
  name: string;
  values: number[];
}

const COLOURS = ['#2563eb', '#16a34a', '#d97706', '#dc2626', '#7c3aed', '#0891b2', '#db2777', '#4b5563'];

export function BarChart(props: { title: string; labels: string[]; series: BarSeries[]; format: (n: number) => string }) {
  const { labels, series } = props;
  const totals = labels.map((_, i) => series.reduce((s, x) => s + (x.values[i] ?? 0), 0));
  const max = Math.max(1, ...totals);
  const w = 640;
  const h = 220;
  const pad = 28;
  const bw = labels.length ? Math.min(48, (w - pad * 2) / labels.length - 6) : 0;
  const step = labels.length ? (w - pad * 2) / labels.length : 0;
  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      <svg viewBox={`0 0 ${w} ${h + 40}`} role="img" aria-label={props.title}>
        <line x1={pad} y1={h} x2={w - pad} y2={h} stroke="#9ca3af" />
        {labels.map((label, i) => {
          let y = h;
          const x = pad + i * step + (step - bw) / 2;
          return (
            <g key={label}>
              {series.map((s, j) => {
                const v = s.values[i] ?? 0;
                const bh = (v / max) * (h - 20);
                y -= bh;
                return v > 0 ? (
                  <rect x={x} y={y} width={bw} height={bh} fill={COLOURS[j % COLOURS.length]}>
                    <title>{`${label} ${s.name}: ${props.format(v)}`}</title>
                  </rect>
                ) : null;
              })}
              <text x={x + bw / 2} y={h + 16} text-anchor="middle" font-size="11">{label.slice(5)}</text>
            </g>
          );
        })}
      </svg>
      <ul class="legend">
        {series.map((s, j) => (
          <li key={s.name}>
            <span class="swatch" style={{ background: COLOURS[j % COLOURS.length] }} />
            {s.name}
          </li>
        ))}
      </ul>
    </figure>
  );
}
