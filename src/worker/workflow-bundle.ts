import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * The workflow bundle scripts/build.mjs writes next to the compiled gateway (dist/workflow-bundle.js), built from
 * the same compiled workflows with WORKFLOW_INTERCEPTOR_MODULES. A worker that bundles at start loads webpack and
 * keeps it for its whole life (about 80 MiB of resident memory); one that reads this file never loads it.
 */
export const PREBUILT_BUNDLE_PATH = path.join(__dirname, '..', '..', 'workflow-bundle.js');

/**
 * The pre-built bundle when this process runs the compiled gateway and the build wrote one; undefined when it runs
 * the TypeScript (tests, tsx), whose workflows may be newer than any build.
 */
export function prebuiltWorkflowBundle(): { codePath: string } | undefined {
  return __filename.endsWith('.js') && existsSync(PREBUILT_BUNDLE_PATH) ? { codePath: PREBUILT_BUNDLE_PATH } : undefined;
}

/**
 * The gateway's workflows bundled now, with the interceptor modules every worker adds: the build's bundle, the
 * tests' shared one and a replay without a build. The worker SDK (and its webpack) is loaded only here.
 */
export async function bundleGatewayWorkflows(): Promise<{ code: string }> {
  const [{ bundleWorkflowCode }, { WORKFLOWS_PATH, WORKFLOW_INTERCEPTOR_MODULES }] = await Promise.all([import('@temporalio/worker'), import('./worker')]);
  const quiet = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };
  return bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES, logger: quiet });
}
