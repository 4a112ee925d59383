import { groupSettings } from '../../gateway-config/lookup';
import type { GatewayConfig } from '../../gateway-config/schema';

/** A key's rate limits; 0 is no limit. */
export interface KeyLimits {
  rpm: number;
  tpm: number;
  concurrency: number;
}

export const NO_LIMITS: Readonly<KeyLimits> = Object.freeze({ rpm: 0, tpm: 0, concurrency: 0 });

/** Whether any limit is set: a key without one is admitted with nothing counted. */
export function hasLimits(limits: KeyLimits): boolean {
  return limits.rpm !== 0 || limits.tpm !== 0 || limits.concurrency !== 0;
}

/** What a key sets itself (its record's `rpm_limit`, `tpm_limit`, `max_concurrency`). */
export interface OwnLimits {
  rpmLimit: number;
  tpmLimit: number;
  maxConcurrency: number;
}

/** The limits in force for a key: each of its own non-zero values, else its group's default (GATEWAY_CONFIG `groups:`). */
export function effectiveLimits(own: OwnLimits, group: string, config: GatewayConfig): KeyLimits {
  const defaults = groupSettings(config, group);
  const rpm = own.rpmLimit || defaults?.rpm_limit || 0;
  const tpm = own.tpmLimit || defaults?.tpm_limit || 0;
  const concurrency = own.maxConcurrency || defaults?.max_concurrency || 0;
  return rpm === 0 && tpm === 0 && concurrency === 0 ? NO_LIMITS : { rpm, tpm, concurrency };
}
