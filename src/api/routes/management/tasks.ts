import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { UnavailableError } from '../../../domain/errors';
import { VideoNotFoundError } from '../../../domain/video/errors';
import type { VideoTask } from '../../../domain/video/tasks';
import { currentWorkflowBundle, exportWorkflowHistory, parseHistoryFile, replayHistories } from '../../../temporal/history';
import { videoWorkflowId } from '../../../temporal/video-starter';
import type { GatewayDeps } from '../../deps';

/** What these routes use of the gateway's services. */
type RouteDeps = Pick<GatewayDeps, 'repos' | 'temporal' | 'videoStore' | 'videos'>;
import { toPage } from '../../../schemas/pagination';
import { envelope, managementResponse } from '../../../schemas/responses';
import { taskIdParam, taskListQuery, taskRecord, videoRetention } from '../../../schemas/tasks';
import { describeRetentionSchedule } from '../../../temporal/video-retention-schedule';
import { ok, okPage } from './envelope';
import { requireAdmin } from '../../plugins/auth';

const seconds = (d: Date | null) => (d ? Math.floor(d.getTime() / 1000) : null);

/** The operator's view of a task (all families alike). */
function recordOf(t: VideoTask, retentionSeconds: number): z.infer<typeof taskRecord> {
  return {
    id: t.id,
    family: t.family,
    model: t.model,
    status: t.status,
    progress: t.progress,
    token_name: t.tokenName,
    channel: t.channel,
    quota: t.quota,
    billed: t.billed,
    error_code: t.errorCode,
    error_message: t.errorMessage,
    duration: t.duration,
    resolution: t.resolution,
    request_id: t.requestId,
    workflow_id: videoWorkflowId(t.id),
    created_at: seconds(t.createdAt)!,
    updated_at: seconds(t.updatedAt)!,
    finished_at: seconds(t.finishedAt),
    result:
      t.status === 'completed'
        ? {
            stored: t.result.storedAt !== null && t.result.deletedAt === null,
            expires_at: t.result.storedAt && !t.result.deletedAt ? seconds(t.result.storedAt)! + retentionSeconds : null,
            fallback: t.result.fallback,
            deleted_at: seconds(t.result.deletedAt),
          }
        : null,
  };
}

/** `/api/task/*`: the account's video tasks of every family, and each task's workflow history (the audit trail). */
export const tasksRoutes: FastifyPluginAsync<{ deps: RouteDeps }> = async (base, { deps }) => {
  const app = base.withTypeProvider<ZodTypeProvider>();
  const auth = { onRequest: app.requireSystemToken };

  app.get('/api/task/', { ...auth, schema: { querystring: taskListQuery, response: managementResponse(envelope(z.array(taskRecord))) } }, async (request, reply) => {
    const q = request.query;
    const filters = { status: q.status, model: q.model, family: q.family, startTimestamp: q.start_timestamp, endTimestamp: q.end_timestamp };
    const page = await deps.repos.videoTasks.list(request.account.id, filters, toPage(q));
    return okPage(reply, { items: page.items.map((t) => recordOf(t, deps.videos.settings.retentionSeconds)), total: page.total });
  });

  // Retention of finished videos: where they are kept, for how long, and the schedule that deletes them. Counts
  // span every account, so it is the operator's view (admin), as the channels are.
  app.get('/api/video/retention', { onRequest: [app.requireSystemToken, requireAdmin], schema: { response: managementResponse(envelope(videoRetention)) } }, async () => {
    const retentionSeconds = deps.videos.settings.retentionSeconds;
    const schedule = deps.temporal ? await describeRetentionSchedule(deps.temporal.client, deps.temporal.taskQueue) : null;
    const counts = await deps.repos.videoTasks.resultCounts();
    return ok({
      retention_days: retentionSeconds / 86_400,
      store: deps.videoStore.description,
      schedule: schedule && { id: schedule.scheduleId, next_run_at: seconds(schedule.nextRunAt), last_run_at: seconds(schedule.lastRunAt), runs: schedule.runs },
      results: { stored: counts.stored, fallback: counts.fallback, deleted: counts.deleted, stored_bytes: counts.storedBytes },
    });
  });

  app.get('/api/task/:id', { ...auth, schema: { params: taskIdParam, response: managementResponse(envelope(taskRecord)) } }, async (request) => {
    return ok(recordOf(await deps.videos.get(request.account.id, request.params.id), deps.videos.settings.retentionSeconds));
  });

  const history = z.object({ format: z.string(), workflowId: z.string(), workflowType: z.string(), runs: z.array(z.looseObject({ runId: z.string() })) });
  // The task's webhook delivery attempts (status, error; never the body or the secret).
  const attempts = z.array(z.object({ attempt: z.int(), status: z.int().nullable(), error: z.string().nullable(), delivered: z.boolean(), created_at: z.int() }));
  app.get('/api/task/:id/webhooks', { ...auth, schema: { params: taskIdParam, response: managementResponse(envelope(attempts)) } }, async (request) => {
    const task = await deps.videos.get(request.account.id, request.params.id);
    return ok(await deps.repos.webhooks.attemptsOf(request.account.id, task.id));
  });

  async function historyOf(accountId: number, id: string): Promise<string> {
    const task = await deps.videos.get(accountId, id);
    if (!deps.temporal) throw new UnavailableError('task histories need the workflow engine, which this process has no connection to');
    try {
      return await exportWorkflowHistory(deps.temporal.client, videoWorkflowId(task.id), undefined, { allRuns: true });
    } catch (err) {
      if ((err as { name?: string }).name === 'WorkflowNotFoundError') throw new VideoNotFoundError(task.id);
      throw err;
    }
  }

  app.get('/api/task/:id/history', { ...auth, schema: { params: taskIdParam, response: managementResponse(envelope(history)) } }, async (request) => {
    return ok(JSON.parse(await historyOf(request.account.id, request.params.id)) as z.infer<typeof history>);
  });

  // Replays the task's history against the workflow code this process runs: does it still take the same path?
  const replay = z.object({
    deterministic: z.boolean().describe('every run replayed without a determinism violation or other error'),
    runs: z.array(z.object({ run: z.int(), run_id: z.string(), ok: z.boolean(), non_deterministic: z.boolean(), error: z.string().nullable() })),
  });
  app.post('/api/task/:id/replay', { ...auth, schema: { params: taskIdParam, response: managementResponse(envelope(replay)) } }, async (request) => {
    const exported = parseHistoryFile(await historyOf(request.account.id, request.params.id), request.params.id);
    const reports = await replayHistories([exported], { workflowBundle: await currentWorkflowBundle() });
    return ok({
      deterministic: reports.every((r) => r.ok),
      runs: reports.map((r) => ({ run: r.run, run_id: r.runId, ok: r.ok, non_deterministic: r.nonDeterministic, error: r.error ?? null })),
    });
  });
};
