import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { ScenarioResult } from './types';

export interface RunInfo {
  date: string;
  command: string;
  machine: string;
  database: string;
  node: string;
  loadBefore: string;
}

const HEADER = `# Benchmark results

Written by \`npm run bench\` (bench/run.ts). Each scenario's section below holds its latest run and is
replaced by the next one; the history table keeps one line per run. Sections outside the markers are
hand-written and left alone by the script.

`;

const HISTORY_BEGIN = '<!-- history:begin -->';
const HISTORY_END = '<!-- history:end -->';
const HISTORY_HEAD = '| date | scenario | req/s | p50 ms | p99 ms | max ms | errors | non-2xx | target met | command |\n|---|---|---|---|---|---|---|---|---|---|';

function section(name: string, title: string, run: RunInfo, result: ScenarioResult): string {
  const rows = result.figures.map(([k, v]) => `| ${k} | ${v} |`).join('\n');
  const lines = [
    `<!-- scenario:${name}:begin -->`,
    `## ${name}: ${title}`,
    '',
    `- Date: ${run.date}`,
    `- Command: \`${run.command}\``,
    `- Machine: ${run.machine}`,
    `- Load average before the run: ${run.loadBefore} (the machine may be shared with other work)`,
    `- Database: ${run.database}`,
    `- Node: ${run.node}`,
  ];
  if (result.target) lines.push(`- Target: ${result.target.description} — **${result.target.met ? 'met' : 'NOT met'}**`);
  lines.push('', '| figure | value |', '|---|---|', rows);
  if (result.notes?.length) lines.push('', ...result.notes.map((n) => `- ${n}`));
  lines.push(`<!-- scenario:${name}:end -->`);
  return lines.join('\n');
}

/** Replaces (or adds) the scenario's section and appends a history line. */
export function recordResult(file: string, name: string, title: string, run: RunInfo, result: ScenarioResult): void {
  let text = existsSync(file) ? readFileSync(file, 'utf8') : HEADER;
  const block = section(name, title, run, result);
  const begin = `<!-- scenario:${name}:begin -->`;
  const end = `<!-- scenario:${name}:end -->`;
  const b = text.indexOf(begin);
  const e = text.indexOf(end);
  if (b !== -1 && e > b) {
    text = text.slice(0, b) + block + text.slice(e + end.length);
  } else {
    const h = text.indexOf('## History');
    text = h === -1 ? `${text.trimEnd()}\n\n${block}\n` : `${text.slice(0, h)}${block}\n\n${text.slice(h)}`;
  }
  if (!text.includes(HISTORY_BEGIN)) text = `${text.trimEnd()}\n\n## History\n\n${HISTORY_BEGIN}\n${HISTORY_HEAD}\n${HISTORY_END}\n`;
  const l = result.load;
  const row = l
    ? `| ${run.date} | ${name} | ${l.requestsPerSecond.toFixed(0)} | ${l.latencyMs.p50} | ${l.latencyMs.p99} | ${l.latencyMs.max} | ${l.errors} | ${l.non2xx} | ${result.target ? (result.target.met ? 'yes' : 'no') : '-'} | \`${run.command}\` |`
    : `| ${run.date} | ${name} | - | - | - | - | - | - | ${result.target ? (result.target.met ? 'yes' : 'no') : '-'} | \`${run.command}\` |`;
  text = text.replace(HISTORY_END, `${row}\n${HISTORY_END}`);
  writeFileSync(file, text.endsWith('\n') ? text : `${text}\n`);
}
