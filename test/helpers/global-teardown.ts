import type { DevServer } from '../../src/temporal/dev-server';
import type { TestDatabase } from './test-database';

export default async function globalTeardown(): Promise<void> {
  const state = (globalThis as Record<string, unknown>).__gatewayTest as
    | { database: TestDatabase; temporal: DevServer }
    | undefined;
  if (!state) return;
  await state.temporal.shutdown().catch(() => undefined);
  await state.database.close().catch(() => undefined);
}
