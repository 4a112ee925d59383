import type { SimulatorFault, SimulatorFaultKind } from './types';

const KINDS: ReadonlySet<string> = new Set<SimulatorFaultKind>(['status', 'reset', 'reset-mid-stream', 'stall', 'stall-mid-stream', 'video-fail']);

/** The fault a request gets: from the `x-sim-fault` header, else the first matching registered fault. */
export interface ActiveFault {
  kind: SimulatorFaultKind;
  status: number;
}

/** The registered faults, in the order they were added; `count` is used up per matching request. */
export class FaultBook {
  private faults: Array<SimulatorFault & { left: number }> = [];

  add(f: SimulatorFault): void {
    if (!KINDS.has(f.kind)) throw new Error(`unknown simulator fault kind: ${String(f.kind)}`);
    if (f.kind === 'status' && !validStatus(f.status)) throw new Error(`a 'status' fault needs a status 400..599, got ${String(f.status)}`);
    if (f.count !== undefined && !(Number.isInteger(f.count) && f.count > 0)) throw new Error(`fault count must be a positive integer, got ${f.count}`);
    this.faults.push({ ...f, left: f.count ?? Infinity });
  }

  clear(): void {
    this.faults = [];
  }

  get size(): number {
    return this.faults.length;
  }

  /** The first fault matching the request, counting it as used; `video-fail` faults match video submissions only. */
  take(path: string, model: string | undefined, videoSubmit = false): ActiveFault | undefined {
    for (let i = 0; i < this.faults.length; i++) {
      const f = this.faults[i];
      if (f.kind === 'video-fail' && !videoSubmit) continue;
      if (f.path !== undefined && !path.endsWith(f.path)) continue;
      if (f.model !== undefined && f.model !== model) continue;
      if (--f.left <= 0) this.faults.splice(i, 1);
      return { kind: f.kind, status: f.status ?? 500 };
    }
    return undefined;
  }
}

/**
 * The `x-sim-fault` request header: `status=503`, `reset`, `reset-mid-stream`, `stall`,
 * `stall-mid-stream`, `video-fail` (a bare number means `status=<n>`). Undefined when absent or not understood.
 */
export function parseFaultHeader(value: string | string[] | undefined): ActiveFault | undefined {
  if (typeof value !== 'string') return undefined;
  const v = value.trim().toLowerCase();
  if (KINDS.has(v) && v !== 'status') return { kind: v as SimulatorFaultKind, status: 500 };
  const m = /^(?:status\s*=\s*)?(\d{3})$/.exec(v);
  if (m && validStatus(Number(m[1]))) return { kind: 'status', status: Number(m[1]) };
  return undefined;
}

function validStatus(s: number | undefined): s is number {
  return typeof s === 'number' && Number.isInteger(s) && s >= 400 && s <= 599;
}
