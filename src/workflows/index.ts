// Every workflow the worker serves. Deterministic code only: no Node built-ins, activities by type.
export { batchFileRetentionWorkflow } from './batch-file-retention';
export { inferenceBatchWorkflow } from './inference-batch';
export { keysIssueWorkflow, keysRotateWorkflow, keysStatusWorkflow } from './keys-batch';
export { pingWorkflow } from './ping';
export { videoRetentionWorkflow } from './video-retention';
export { videoTaskWorkflow } from './video-task';
export { deliverWebhook } from './webhook-delivery';
