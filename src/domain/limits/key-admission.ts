import type { PeriodBudget } from '../billing/holds';
import type { ApiKeyPrincipal } from '../keys/key-auth';
import type { KeyLimiter } from '../ports/key-limiter';
import type { Admission } from './admission';
import { effectiveLimits } from './key-limits';
import { periodBudget } from './period';
import type { ConfigStore } from '../../gateway-config/store';

/** What admitting a key reads: its limiter and the config its group's limits come from. */
export interface KeyAdmissionDeps {
  limits: KeyLimiter;
  config: Pick<ConfigStore, 'current'>;
}

/**
 * A key's admission under its limits (its own, else its group's) and the periodic budget in force. A key without
 * limits is admitted at once (UNLIMITED, nothing counted); otherwise the admission is a promise, rejected with a
 * KeyLimitError when the key is over a limit. The admission's `release` frees its in-flight slot. The api's
 * `limitKey` hook and the batch runner both admit through here.
 */
export function keyAdmission(deps: KeyAdmissionDeps, key: ApiKeyPrincipal): { admission: Admission | Promise<Admission>; period: PeriodBudget | undefined } {
  const snapshot = deps.config.current();
  const period = periodBudget(key, key.group, snapshot, deps.limits.now());
  return { admission: deps.limits.admit(key.tokenId, effectiveLimits(key, key.group, snapshot)), period };
}

/** keyAdmission, always as a promise (the batch runner admits each line's call this way). */
export async function admitKey(deps: KeyAdmissionDeps, key: ApiKeyPrincipal): Promise<{ admission: Admission; period: PeriodBudget | undefined }> {
  const { admission, period } = keyAdmission(deps, key);
  return { admission: await admission, period };
}

/** The key's concurrency limit in force (0: none). */
export function concurrencyOf(config: Pick<ConfigStore, 'current'>, key: ApiKeyPrincipal): number {
  return effectiveLimits(key, key.group, config.current()).concurrency;
}
